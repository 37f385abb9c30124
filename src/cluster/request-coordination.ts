import { createHash } from 'node:crypto'
import { ApiError } from '../errors.js'
import type { BeforeHandler, Coordination, Forwarded, ForwardedRequest, RequestCoordination } from '../http/coordination.js'
import type { RateGroup } from '../generated/types.js'
import type { RateDecision } from '../http/rate-limit.js'
import type { Result } from '../http/route.js'
import type { Store } from '../store/store.js'
import type { BookingAsk } from '../campaigns/records.js'
import { forwardToNode, forwardToOwner } from './forward.js'
import type { NodeLink } from './link.js'
import { partitionOf } from './screen-partitions.js'
import { lockName, LOCK_TTL_MS } from './record-locks.js'
import { refusalOf } from './fenced-commits.js'
import { closeFence, type Fence } from '../store/changes.js'
import type { ServedPartitions } from './served-partitions.js'

/** What a cluster node's request coordination needs besides its link to the cluster. */
export interface ClusterRequestDeps {
  link: NodeLink
  /** CLUSTER_ACK_TIMEOUT_MS: how long an answer waits for the engine's quorum under what it wrote. */
  ackTimeoutMs: number
  /** Whether a claimed Idempotency-Key has its outcome stored on this node (Idempotency.stored). */
  stored: (claim: string) => boolean
  /** The thread's journal: resolves with the seq its turn recorded once the turn has committed. */
  journal: { applied (): Promise<number> | undefined }
  /** Bookings of screen time decided in the logs (src/campaigns/rehearsed-bookings.ts). */
  bookings: RequestBookings
  /** The partitions whose spots this node decides; the others' requests go to their owners (forward.ts). */
  served: ServedPartitions
  store: Store
  /** CLUSTER_NODE_ID. */
  node: string
}

/** What a booking route's coordination does with the node's bookings: rehearse, decide, run, give back the rest. */
export interface RequestBookings<S = unknown, C = unknown> {
  /** Runs the handler as a rehearsal: what it would book. */
  rehearse (base: string, run: () => Promise<void>): Promise<C[]>
  /** The commands of what a route declares it takes (RouteDef.declares), named as its run will name its claims. */
  declared (base: string, asks: BookingAsk[]): C[]
  /** Has a rehearsal's commands decided (keyed: its claims are named from an Idempotency-Key); the session the handler then runs with. */
  decide (base: string, commands: C[], keyed: boolean): Promise<S>
  /** A dry run's session: checked against this node's copy, booking nothing. */
  dry (): S
  within<T> (session: S, run: () => T): T
  /** Gives back what a session took and its run did not commit. */
  giveBackUnused (session: S): void
}

/** An Idempotency-Key's name among the names claimed across a cluster. */
const idempotencyName = (claim: string): string => `idempotency-key\u0000${claim}`

const retryShortly = { retry_after_seconds: 1 }
const retryHeader = { 'Retry-After': '1' }

/** Writes under a record's lock that the names' log refused: its lock had passed to another request first. */
const lockLost = (refused: 'all' | 'some'): ApiError => new ApiError('service_unavailable', refused === 'all'
  ? 'This request held the record\'s lock too long (its node paused or was cut off from the cluster) and another request took it over: nothing was changed. Retry.'
  : 'This request held the record\'s lock too long (its node paused or was cut off from the cluster) and another request took it over: what it wrote before then stands, what it wrote after was not kept. Read the record before you retry.', retryShortly, retryHeader)

/** Thrown by rated() when the request must wait for a rate window's grant from the engine; again() waits for it. */
class RateWait {
  constructor (readonly granted: Promise<boolean>) {}
}

/** A cluster node's side of the request coordination seam (src/http/coordination.ts). */
export function clusterCoordination (deps: ClusterRequestDeps): Coordination {
  return { begin: (requestId) => new ClusterRequest(deps, requestId) }
}

/**
 * One request on a cluster node. Its claims and locks are held in the engine; everything it takes is given back
 * once, at its end (a request that ends while a claim is on its way gives it back when the claim lands).
 */
class ClusterRequest implements RequestCoordination {
  readonly #deps: ClusterRequestDeps
  readonly #id: string
  #ended = false
  /** When this request first waited for a rate window's grant (performance.now()). */
  #rateWaitSince: number | undefined
  /** Whether this request already waited for its node to catch up with the cluster (a key refused once). */
  #caughtUp = false
  /** Its Idempotency-Key's claim in the engine: whether it won it, and whether it still holds it. */
  #key: { claim: string, won: boolean, held: boolean } | undefined
  /** The record it locked (RouteDef.exclusive), its lock's number, and whether it still holds it. */
  #lock: { name: string, n: number, held: boolean } | undefined
  /** Its writes under that lock (fenced-commits.ts): the lock's claim, and the transactions committed under it. */
  #fence: Fence | undefined
  /** A held answer under way (an agent's tool call): its lock is given back once it settles. */
  #answering: Promise<unknown> | undefined
  /** The unique name it claimed (RouteDef.unique), with its owner, and whether it still holds it. */
  #name: { name: string, owner: string, won: boolean, held: boolean } | undefined
  /** What the logs decided it may book (RouteDef.books), once they have. */
  #booking: unknown

  constructor (deps: ClusterRequestDeps, requestId: string) {
    this.#deps = deps
    this.#id = requestId
  }

  /**
   * A node that has spent its part of the window waits for the engine's next grant rather than refuse a request
   * under the limit (it asked ahead, so this is rare); a failed authentication is refused anyway.
   */
  rated (decision: RateDecision, group: RateGroup): void {
    const rates = this.#deps.link.rates
    if (decision.ask !== undefined) rates.ask(decision.ask)
    if (decision.wait !== true || group === 'unauthenticated') return
    this.#rateWaitSince ??= performance.now()
    if (performance.now() - this.#rateWaitSince < rates.waitMs) throw new RateWait(rates.granted(rates.waitMs))
    throw new ApiError('service_unavailable', 'The cluster cannot grant this rate window right now; retry shortly.', retryShortly, retryHeader)
  }

  /**
   * Two refusals may be the cluster's news not reaching this node yet: a rate window whose grant is on its way, and
   * an API key (or its partner) another node has just acknowledged (a write is acknowledged once the engine holds it,
   * and reaches the other nodes milliseconds later). The request is admitted again once this node has caught up, once.
   */
  again (refusal: unknown, presentedKey: string | undefined): Promise<unknown> | undefined {
    if (refusal instanceof RateWait) return refusal.granted
    if (this.#caughtUp || presentedKey === undefined || presentedKey === '') return undefined
    // A key whose partner or seat (a record, from the names' log) has not reached this node yet reads as no partner's.
    if (!(refusal instanceof ApiError) || (refusal.code !== 'authentication_required' && refusal.code !== 'not_authorized')) return undefined
    this.#caughtUp = true
    return this.#deps.link.caughtUp()
  }

  before (step: BeforeHandler): Promise<void> | undefined {
    if (step.claim !== undefined) {
      if (this.#key === undefined) return this.#claimKey(step.claim)
      if (!this.#key.won) throw new ApiError('idempotency_key_in_use', 'A request with this Idempotency-Key is still in progress on another node; retry when it has finished.')
    }
    if (this.#lock === undefined) {
      const record = step.exclusive()
      if (record !== undefined) return this.#lockRecord(record)
    }
    const unique = step.unique()
    if (unique !== undefined) {
      if (this.#name === undefined) return this.#claimName(unique.name, step.owner())
      if (!this.#name.won) throw unique.taken()
    }
    if (!this.#caughtUp && step.namesUnknown()) {
      // Made through another node a moment ago, perhaps: looked for again once this node has caught up, once.
      this.#caughtUp = true
      return this.#deps.link.caughtUp().then(() => {})
    }
    if (step.books !== undefined && this.#booking === undefined) return this.#book(step)
    return undefined
  }

  /**
   * A booking route's handler runs with what the logs decided it may book; a dry run's, checked here. What the run
   * did not keep is given back.
   */
  executing (run: () => Result): Result {
    const fence = this.#fence
    const result = fence === undefined ? this.#executing(run) : this.#deps.store.changes!.fenced(fence, () => this.#executing(run))
    if (fence !== undefined && result.kind === 'held') this.#answering = result.answer.catch(() => {})
    return result
  }

  #executing (run: () => Result): Result {
    const session = this.#booking
    if (session === undefined) return run()
    const bookings = this.#deps.bookings
    let result: Result | undefined
    try {
      result = bookings.within(session, run)
      return result.kind !== 'held' ? result : { kind: 'held', answer: result.answer.finally(() => bookings.giveBackUnused(session)) }
    } finally {
      if (result?.kind !== 'held') bookings.giveBackUnused(session)
    }
  }

  within<T> (write: () => T): T {
    const fence = this.#fence
    return fence === undefined ? write() : this.#deps.store.changes!.fenced(fence, write)
  }

  /**
   * Rehearses the handler (or reads what its route declares it takes), then has what it books decided in the logs,
   * before it runs for real. Its claims are named from its Idempotency-Key and request when it has one, so a retry asks
   * for the claims the first try made.
   */
  #book (step: BeforeHandler): Promise<void> | undefined {
    const bookings = this.#deps.bookings
    if (step.books === 'dry') {
      this.#booking = bookings.dry()
      return undefined
    }
    const base = step.claim !== undefined ? createHash('sha256').update(`${step.claim}\u0000${step.owner()}`).digest('base64url').slice(0, 22) : this.#id
    return this.#asked(base, step).then(async (commands) => await bookings.decide(base, commands, step.claim !== undefined)).then((session) => {
      this.#booking = session
      if (this.#ended) bookings.giveBackUnused(session)
    })
  }

  failed (): Promise<void> | undefined {
    const name = this.#name
    if (name?.held !== true) return undefined
    name.held = false
    return this.#deps.link.names.release(name.name, name.owner)
  }

  /**
   * Answers a write to replicated state once the engine's quorum holds it, so no node's loss can take an acknowledged
   * key, seat or partner with it. Past CLUSTER_ACK_TIMEOUT_MS the answer is 503: the write stands here and ships when
   * the engine is back, and a retry with the same Idempotency-Key replays its outcome. A write under a record's lock
   * answers once the names' log has decided it: 503 when refused (put back here, it changed nothing), or when not
   * decided in time (a retry with the same Idempotency-Key replays its outcome if it counted, or runs again).
   */
  acknowledged (seq: number): Promise<void> | undefined {
    if (seq <= 0) return undefined
    return this.#deps.link.shipped.wait(seq, this.#deps.ackTimeoutMs).then((held) => {
      if (!held) {
        if (this.#fence !== undefined) throw new ApiError('service_unavailable', 'The cluster has not decided this change yet; retry with the same Idempotency-Key for its outcome.', retryShortly, retryHeader)
        throw new ApiError('service_unavailable', 'The change is saved on this node, but the cluster has not confirmed it yet; retry with the same Idempotency-Key for its outcome.', retryShortly, retryHeader)
      }
      const refused = this.#refused(seq)
      if (refused !== undefined) throw lockLost(refused)
    })
  }

  /**
   * Whether the names' log refused this request's writes under its lock through seq (the shipper says so): all of them,
   * or only some (an agent's call whose later writes came after its lock passed on), undefined when none.
   */
  #refused (seq: number): 'all' | 'some' | undefined {
    const fence = this.#fence
    if (fence === undefined || fence.seqs.length === 0) return undefined
    this.#deps.store.refresh()
    return refusalOf(this.#deps.store, fence, seq)
  }

  /**
   * A node's bids and the settlements of its spots are in the engine before they are acknowledged: a journaled write
   * waits for its turn's commit, then for what that recorded to ship. Such an answer comes on a later tick, so these
   * routes do not support HTTP pipelining on a cluster node.
   */
  decidedElsewhere (screen: () => string | undefined, request: () => ForwardedRequest, decider: () => string | undefined): Promise<Forwarded> | undefined {
    const screenId = screen()
    if (screenId === undefined) return undefined
    const { served, store, node } = this.#deps
    const decidedBy = decider()
    if (decidedBy !== undefined) return decidedBy === node ? undefined : forwardToNode(store, node, decidedBy, request(), this.#deps.ackTimeoutMs)
    const partition = partitionOf(screenId, served.partitions)
    return served.serves(partition) ? undefined : forwardToOwner(store, node, partition, request(), this.#deps.ackTimeoutMs)
  }

  turn (): Promise<void> | undefined {
    return this.#deps.journal.applied()?.then((seq) => this.acknowledged(seq))
  }

  /**
   * Gives back what this request holds in the engine: its record's lock, and its Idempotency-Key's claim unless the
   * key has an outcome stored (then the claim stays until it lapses: a retry through a node that has not applied the
   * outcome yet must not run the request again).
   */
  end (): void {
    this.#ended = true
    const link = this.#deps.link
    const lock = this.#lock
    if (lock?.held === true) {
      lock.held = false
      const fence = this.#fence
      const unlock = (): void => {
        if (fence !== undefined) fence.closed = true
        link.locks.unlock(lock.name, lock.n)
      }
      const decided = this.#decided()
      if (decided === undefined) unlock()
      else void decided.finally(unlock)
    }
    const key = this.#key
    if (key?.held === true) {
      key.held = false
      if (!this.#deps.stored(key.claim)) void link.names.release(idempotencyName(key.claim), this.#id)
    }
  }

  /**
   * Resolves once what the request wrote under its lock is decided (a held answer settled first), or once the lock
   * would be taken over anyway; undefined when nothing is left to decide. Given back before, the lock could go to a
   * request of this node that reads a write the log may yet refuse.
   */
  #decided (): Promise<void> | undefined {
    const fence = this.#fence
    if (fence === undefined) return undefined
    const shipped = this.#deps.link.shipped
    // Closed before its last write is read: what the request started writes later under no lock (a moderation it
    // scheduled), and cannot land after the lock is given back, refused.
    if (this.#answering === undefined && closeFence(fence) <= shipped.through) return undefined
    return (this.#answering ?? Promise.resolve()).then(async () => { await shipped.wait(closeFence(fence), LOCK_TTL_MS) })
  }

  /**
   * An Idempotency-Key is the request's across the cluster before the handler runs, since the same key retried
   * through another node at the same moment must not run twice. A key another request holds is first looked up again
   * once this node has caught up: its outcome replays if that request has finished, else 409 idempotency_key_in_use.
   * These requests already wait for their outcome to ship (the stored outcome is replicated), so the claim costs them
   * no pipelining.
   */
  async #claimKey (claim: string): Promise<void> {
    // A live holder stores its outcome within the ack timeout: a claim twice that old belongs to a request that ended
    // without one (refused for want of a quorum after its claim had landed, or its node died), and is taken over.
    const won = await this.#deps.link.names.claim(idempotencyName(claim), this.#id, 2 * this.#deps.ackTimeoutMs)
    this.#key = { claim, won, held: won }
    if (this.#ended) return this.end()
    // The request holding the key may have finished on another node, its outcome on its way here.
    if (!won) await this.#deps.link.caughtUp()
  }

  /**
   * Locks the record cluster-wide, and catches up so that the handler reads it as the lock's last holder left it: with
   * every write the names' log accepted before the lock was this request's (its claim is answered once this node has
   * applied the log that far), and none this node wrote that the log may still refuse (its own earlier ones, decided
   * first). What the handler then writes is fenced by the lock's claim (fenced-commits.ts).
   */
  async #lockRecord (name: string): Promise<void> {
    const link = this.#deps.link
    this.#lock = { name, n: await link.locks.lock(name, this.#id), held: true }
    if (this.#ended) return this.end()
    this.#fence = { name: lockName(name), owner: this.#id, seqs: [] }
    const store = this.#deps.store
    store.refresh()
    const undecided = store.changes?.recorded ?? 0
    if (!await link.caughtUp() || !await link.shipped.wait(undecided, this.#deps.ackTimeoutMs)) {
      throw new ApiError('service_unavailable', 'This node could not catch up with the cluster in time to read the record; retry shortly.', retryShortly, retryHeader)
    }
  }

  /**
   * What the handler books: what its route declares, else its rehearsal. A record it does not find may have been made
   * through another node a moment ago (a hold confirmed, or a creative approved, at once through another node): it is
   * asked again once this node has caught up, once.
   */
  async #asked (base: string, step: BeforeHandler): Promise<unknown[]> {
    const bookings = this.#deps.bookings
    const declared = step.declared
    const ask = async (): Promise<unknown[]> => declared !== undefined ? bookings.declared(base, declared()) : await bookings.rehearse(base, step.rehearse)
    try {
      return await ask()
    } catch (err) {
      if (this.#caughtUp || !(err instanceof ApiError) || err.status !== 404) throw err
      this.#caughtUp = true
      if (!await this.#deps.link.caughtUp()) throw err
      return await ask()
    }
  }

  /**
   * Claims the name the handler's write makes unique: one winner however many nodes try at once, and only the
   * winner runs the handler. The claim is the caller's request (owner): the same request retried, whose first claim
   * landed though its answer was lost, finds the name held by itself.
   */
  async #claimName (name: string, owner: string): Promise<void> {
    const names = this.#deps.link.names
    const won = await names.claim(name, owner)
    this.#name = { name, owner, won, held: won }
    if (this.#ended && won) {
      this.#name.held = false
      await names.release(name, owner)
    }
  }
}
