import { createHash } from 'node:crypto'
import type { NatsConnection, Subscription } from 'nats'
import type { Logger } from '../log.js'
import type { OwnerAt } from './forward.js'
import type { PartitionLog } from './partition-log.js'
import { monotonicMs } from './served-partitions.js'
import type { PartitionOwner } from './records.js'

// Who owns each log a node follows (issue 47): one owner at a time, under an epoch that rises at each change, decided
// in the log itself (partition-log.ts: a takeover is accepted only once the owner's beats have stopped a lease ago in
// log time, or the owner handed the log over, or the owner's node restarted). This module only says when to try:
// which node should own a log is a rendezvous hash over the nodes alive as this node sees them, and a wrong view (a
// node that paused, a clock that jumped, a partition of the network) costs refused attempts, never two owners.

/** How often each node says it is alive, on core NATS (not stored: a node that missed some hears the next). */
const MEMBER_BEAT_MS = 1000

/** A node not heard from for this long is taken for gone when choosing owners. */
const MEMBER_LOST_MS = 3500

/** How often an owner beats each log it owns: several times a lease, so that a late beat or two costs nothing. */
const OWNER_BEAT_MS = 2000

/** A node heard from this long without a break is handed the logs the hash gives it. */
const SETTLED_MS = 5000

export const MEMBERS_SUBJECT = 'oohbid.members'

/**
 * How much of a log's lease (in log time, from a beat's landing) an owner does not count on for acting as the owner:
 * the gap between the clock of the engine member that stamped its beat and the one that may stamp a takeover.
 */
const LEASE_MARGIN_MS = 5000

/** An owner's lease of a log: its beats (and takeover) sent, as far as the log has confirmed them. */
interface Lease {
  /** When the newest beat the log has applied while this node owned it was sent (monotonicMs). */
  confirmed: number | undefined
  /** Beats the engine holds and this node has not applied yet: when each was sent, at which sequence. */
  sent: Array<{ at: number, seq: number }>
}

/** Drops what a lease held: nothing sent before counts for a later ownership. */
function forfeit (lease: Lease): void {
  lease.confirmed = undefined
  lease.sent = []
}

/**
 * Until when (monotonicMs) a node may act as a log's owner: the lease minus its margin from when it sent the newest
 * beat the log has applied while it owned it. A beat that lands in the log at log time t keeps any takeover off until
 * t + lease, and t is no earlier than its sending; a beat that landed after a takeover was refused, which the node
 * sees as no longer owning the log once it has applied that far. Undefined: no confirmed beat, or not the owner.
 */
export function leaseUntil (lease: Lease, owns: boolean, applied: number, leaseMs: number): number | undefined {
  if (!owns) {
    forfeit(lease)
    return undefined
  }
  while (lease.sent.length > 0 && lease.sent[0]!.seq <= applied) lease.confirmed = Math.max(lease.confirmed ?? 0, lease.sent.shift()!.at)
  return lease.confirmed === undefined ? undefined : lease.confirmed + leaseMs - LEASE_MARGIN_MS
}

/** The node a log should be owned by among these: the highest hash of (log, node), so a change moves few logs. */
export function rendezvousOwner (log: string, nodes: string[]): string | undefined {
  let best: { node: string, score: string } | undefined
  for (const node of nodes) {
    const score = createHash('sha1').update(`${log}\u0000${node}`).digest('hex')
    if (best === undefined || score > best.score) best = { node, score }
  }
  return best?.node
}

/** What a node should do about one log now, given who owns it and who should. */
export function ownerStep (o: { owns: boolean, takeable: boolean, owner: PartitionOwner | undefined, self: string, should: string | undefined, shouldSettled: boolean, beatDue: boolean }): 'give' | 'beat' | 'take' | undefined {
  if (o.owns) {
    if (o.should !== undefined && o.should !== o.self && o.shouldSettled) return 'give'
    return o.beatDue ? 'beat' : undefined
  }
  if (!o.takeable) return undefined
  // The node the hash names takes it; so does this node's new life, from its old one, at once.
  return o.should === o.self || o.owner?.node === o.self ? 'take' : undefined
}

export class PartitionOwners {
  readonly #o: { nc: NatsConnection, logs: Map<string, PartitionLog>, self: PartitionOwner, url: string, leaseMs: number, ackTimeoutMs: number, log: Logger, onLeaseEnd: (stream: string) => void }
  /** The other nodes heard from: their life, where they serve HTTP, since when without a break, and when last. */
  readonly #members = new Map<string, { incarnation: string, url: string | undefined, since: number, seen: number }>()
  readonly #beatAt = new Map<string, number>()
  readonly #leases = new Map<string, Lease>()
  readonly #busy = new Set<string>()
  #sub: Subscription | undefined
  #timer: NodeJS.Timeout | undefined

  /**
   * url: where the other nodes reach this node's HTTP port, said in its beats; leaseMs: the logs' lease, in log time;
   * onLeaseEnd: this node stops acting as a log's owner now (it is handing the log over).
   */
  constructor (options: { nc: NatsConnection, logs: Map<string, PartitionLog>, self: PartitionOwner, url: string, leaseMs: number, ackTimeoutMs: number, log: Logger, onLeaseEnd: (stream: string) => void }) {
    this.#o = options
  }

  /** Each named node with where it serves HTTP, as far as this node has heard (itself included). */
  urls (nodes: Array<string | undefined>): OwnerAt[] {
    return nodes.map((node) => node === undefined ? null : { node, url: this.#urlOf(node) })
  }

  /** Every node this node has heard of, itself included, with where it serves HTTP (null: not said). */
  members (): Record<string, string | null> {
    return Object.fromEntries([this.#o.self.node, ...this.#members.keys()].sort().map((node) => [node, this.#urlOf(node)]))
  }

  #urlOf (node: string): string | null {
    return node === this.#o.self.node ? this.#o.url : this.#members.get(node)?.url ?? null
  }

  start (): void {
    const { nc, self } = this.#o
    this.#sub = nc.subscribe(MEMBERS_SUBJECT, {
      callback: (err, msg) => {
        if (err !== null) return
        const heard = JSON.parse(Buffer.from(msg.data).toString('utf8')) as PartitionOwner & { url?: string }
        if (heard.node === self.node) return
        const now = performance.now()
        const known = this.#members.get(heard.node)
        const unbroken = known !== undefined && known.incarnation === heard.incarnation && now - known.seen <= MEMBER_LOST_MS
        this.#members.set(heard.node, { incarnation: heard.incarnation, url: heard.url, since: unbroken ? known.since : now, seen: now })
      }
    })
    const beat = Buffer.from(JSON.stringify({ ...self, url: this.#o.url }))
    this.#timer = setInterval(() => {
      nc.publish(MEMBERS_SUBJECT, beat)
      this.#tick()
    }, MEMBER_BEAT_MS)
    this.#timer.unref()
  }

  stop (): void {
    clearInterval(this.#timer)
    this.#sub?.unsubscribe()
  }

  /** Until when (monotonicMs) this node may act as the log's owner, from its beats the log has confirmed (leaseUntil). */
  leaseUntil (stream: string): number | undefined {
    const log = this.#o.logs.get(stream)
    if (log === undefined) return undefined
    const lease = this.#leaseOf(stream)
    return leaseUntil(lease, log.owns(), log.mark().applied, this.#o.leaseMs)
  }

  #endLease (stream: string): void {
    forfeit(this.#leaseOf(stream))
    this.#o.onLeaseEnd(stream)
  }

  #leaseOf (stream: string): Lease {
    let lease = this.#leases.get(stream)
    if (lease === undefined) this.#leases.set(stream, lease = { confirmed: undefined, sent: [] })
    return lease
  }

  /** The nodes alive as this node sees them, itself included. */
  #alive (now: number): string[] {
    return [this.#o.self.node, ...[...this.#members].filter(([, m]) => now - m.seen <= MEMBER_LOST_MS).map(([node]) => node)]
  }

  #tick (): void {
    const { self, ackTimeoutMs } = this.#o
    const now = performance.now()
    const alive = this.#alive(now)
    for (const [stream, log] of this.#o.logs) {
      if (this.#busy.has(stream) || !log.owned) continue
      const should = rendezvousOwner(stream, alive)
      const member = should === undefined ? undefined : this.#members.get(should)
      const step = ownerStep({
        owns: log.owns(),
        takeable: log.takeable(),
        owner: log.mark().owner,
        self: self.node,
        should,
        shouldSettled: member !== undefined && now - member.since >= SETTLED_MS,
        beatDue: now - (this.#beatAt.get(stream) ?? 0) >= OWNER_BEAT_MS
      })
      if (step === undefined) continue
      if (step === 'beat') this.#beatAt.set(stream, now)
      this.#busy.add(stream)
      const sentAt = monotonicMs()
      // A node handing a log over stops acting as its owner before it says so: the taker may act once the log has it.
      if (step === 'give') this.#endLease(stream)
      const run = step === 'give' ? log.give(ackTimeoutMs) : step === 'take' ? log.takeOver(ackTimeoutMs) : log.beat()
      void run.then((done) => {
        // A beat held by the engine, or a takeover applied (its entry is at or below the mark): the lease runs from its sending.
        if (step === 'beat') this.#leaseOf(stream).sent.push({ at: sentAt, seq: done as number })
        if (step === 'take' && done === true) {
          this.#leaseOf(stream).sent.push({ at: sentAt, seq: log.mark().applied })
          this.#beatAt.set(stream, performance.now())
        }
        if (step !== 'beat' && done === true) this.#o.log.info(step === 'take' ? 'cluster: took over a log' : 'cluster: handed a log over', { log: stream, epoch: log.mark().epoch, ...(step === 'give' ? { to: should } : {}) })
      }, () => {
        // The engine did not answer (an election, no quorum): the next tick tries again.
      }).finally(() => this.#busy.delete(stream))
    }
  }
}
