import { ApiError } from '../errors.js'
import type { WindowAsk } from '../http/rate-limit.js'
import { MarkWaiters } from './mark-waiters.js'
import type { ShippedChanges } from './shipped.js'
import type { UniqueNames } from './unique-names.js'

/** What a cluster node's requests need of the cluster, reached from a hot thread through its supervisor. */
export interface NodeLink {
  /** How far this node's changes are held by the engine: a write answers once its are. */
  shipped: ShippedChanges
  /** Names claimed across the cluster before a route's write makes them (RouteDef.unique). */
  names: UniqueNames
  /** Records locked cluster-wide while a request rewrites them (RouteDef.exclusive). */
  locks: {
    /** Resolves once owner holds the lock; throws 503 when it stayed taken, or the engine cannot say. */
    lock (name: string, owner: string): Promise<void>
    unlock (name: string): void
  }
  /** Cluster-wide rate-limit windows (src/cluster/rate-leases.ts). */
  rates: {
    /** Asks for more of a window (the limiter said to: RateDecision.ask). */
    ask (ask: WindowAsk): void
    /** Resolves true at the next grant to this node, any window's; false after timeoutMs. */
    granted (timeoutMs: number): Promise<boolean>
    /** The supervisor wrote a grant into the shared windows. */
    woken (): void
  }
  /** Resolves once this node has applied every change the engine held when it was called (or after a second). */
  caughtUp (): Promise<void>
}

/** A hot thread's link: the supervisor holds the node's one connection to the engine and answers these calls. */
export function nodeLinkThrough (shipped: ShippedChanges, call: (op: string, ...args: unknown[]) => Promise<unknown>, notify: (op: string, ...args: unknown[]) => void): NodeLink {
  const grants = new MarkWaiters()
  let granted = 0
  return {
    shipped,
    names: {
      claim: (name, owner, takeOverAfterMs) => (call('claim', name, owner, takeOverAfterMs) as Promise<boolean>).catch(() => {
        throw new ApiError('service_unavailable', 'The cluster cannot confirm that this name is free right now; retry shortly.', { retry_after_seconds: 1 }, { 'Retry-After': '1' })
      }),
      release: (name) => notify('release', name)
    },
    locks: {
      lock: async (name, owner) => {
        const held = await (call('lock', name, owner) as Promise<boolean>).catch(() => undefined)
        if (held === true) return
        throw new ApiError('service_unavailable', held === false ? 'Another request is changing this record right now; retry shortly.' : 'The cluster cannot lock this record right now; retry shortly.', { retry_after_seconds: 1 }, { 'Retry-After': '1' })
      },
      unlock: (name) => notify('unlock', name)
    },
    rates: {
      ask: (ask) => notify('lease', ask),
      granted: (timeoutMs) => grants.wait(granted + 1, timeoutMs),
      woken: () => grants.reached(++granted)
    },
    caughtUp: async () => { await call('caughtUp') }
  }
}
