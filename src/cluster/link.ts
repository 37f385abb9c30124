import type { WindowAsk } from '../http/rate-limit.js'

// What a hot thread of a cluster node reaches of its cluster through its supervisor: the cluster's side of the request
// coordination seam (request-coordination.ts) is built on it; nodeLinkThrough and NameClaims implement it.

/**
 * Names that must be unique across a cluster (a seat_id, a partner slug, an Idempotency-Key), claimed in the engine
 * before the write that makes them: one winner however many nodes try at once, the first in the names' log
 * (src/cluster/name-claims.ts). A claim lapses CLAIM_TTL_MS later in log time, by when the row that took the name is on
 * every node and the owner's own check refuses it again.
 */
export interface UniqueNames {
  /**
   * True when this request won the name, or holds it already, or took it over from a holder older than
   * takeOverAfterMs (owner: the request's fingerprint, so a retry of a request
   * whose claim landed after its answer was lost finds it its own); false when another holds it; throws 503 when the
   * engine cannot say.
   */
  claim (name: string, owner: string, takeOverAfterMs?: number): Promise<boolean>
  /** Gives owner's claim of a name back (the write that claimed it did not commit); resolves once it is, or failed. */
  release (name: string, owner: string): Promise<void>
}

/** What a cluster node's requests need of the cluster, reached from a hot thread through its supervisor. */
export interface NodeLink {
  /** How far this node's changes are held by the engine: a write answers once its are. */
  shipped: { wait (seq: number, timeoutMs: number): Promise<boolean>, readonly through: number }
  /** Names claimed across the cluster before a route's write makes them (RouteDef.unique). */
  names: UniqueNames
  /** Records locked cluster-wide while a request rewrites them (RouteDef.exclusive). */
  locks: {
    /** Resolves with the lock's number once owner holds it; throws 503 when it stayed taken, or the engine cannot say. */
    lock (name: string, owner: string): Promise<number>
    unlock (name: string, n: number): void
  }
  /** Cluster-wide rate-limit windows (src/cluster/rate-grants.ts). */
  rates: {
    /** Asks for more of a window (the limiter said to: RateDecision.ask). */
    ask (ask: WindowAsk): void
    /** How long a request waits for a grant: one comes within LOCAL_GRANT_MS whether the engine answers or not. */
    readonly waitMs: number
    /** Resolves true at the next grant to this node, any window's; false after timeoutMs. */
    granted (timeoutMs: number): Promise<boolean>
    /** The supervisor wrote a grant into the shared windows. */
    woken (): void
  }
  /**
   * Resolves true once this node has applied every change the engine held when it was called; false after a second,
   * or when the engine cannot say.
   */
  caughtUp (): Promise<boolean>
}
