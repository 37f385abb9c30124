import type { Bookings, Store } from '../store/store.js'
import { shortfall } from './capacity.js'
import { claimId, type BookingCommand, type BookingDecisions } from './capacity-logs.js'
import type { BookingAsk, BookingItem, ClaimOutcome } from './records.js'

/**
 * One request's bookings. Rehearsing, its handler runs in a transaction that is rolled back and asks for what it
 * books: nothing is checked, everything is recorded. Decided, it runs for real, and each ask is answered as the logs
 * decided it. Dry, it is checked against this node's copy of the rows and books nothing.
 */
export interface BookingSession {
  mode: 'rehearse' | 'decided' | 'dry'
  /** The request's claims are `<base>.<n>`: the same request run again makes the same claims (see below). */
  base: string
  /**
   * Whether the base comes from an Idempotency-Key: a retry may be running on the same claims, so what this run did
   * not keep is not this run's to give back (a hold lapses; a firm claim left over is capacity lost, never sold twice).
   */
  keyed: boolean
  n: number
  commands: BookingCommand[]
  decided: Map<string, { outcome: ClaimOutcome, items?: string }>
  used: Set<string>
}

/** What a cluster node's threads reach of its supervisor to book. */
export interface BookingLink {
  /** Decides a request's commands in the logs, in order, stopping at the first refused. */
  decide (base: string, commands: BookingCommand[]): Promise<BookingDecisions>
  /** Asks the claims log to let a hold lapse once its time has come. */
  expire (claim: string): void
}

const UNKNOWN: ClaimOutcome = { ok: false, reason: 'unknown' }

/**
 * A cluster node's bookings (Share.bookings): a booking route's handler runs twice (src/cluster/request-coordination.ts),
 * first rehearsed to learn what it books (or once, when its route declares what it takes), which is then decided in
 * the logs of the screens' partitions and the claims log (capacity-logs.ts), then for real, taking what was decided.
 * The rows are written by the logs' apply on every node, never here. A request's claims are named from its Idempotency-Key and body when it has one: a retry, or the
 * same request running on a node that woke from a pause, asks for the same claims, which the logs decide once.
 */
export class RehearsedBookings implements Bookings {
  readonly #link: BookingLink
  readonly #partitions: number
  #session: BookingSession | undefined

  /** partitions: how many partitions the cluster's screens hash into (CLUSTER_PARTITIONS). */
  constructor (link: BookingLink, partitions: number) {
    this.#link = link
    this.#partitions = partitions
  }

  /** Runs fn as a rehearsal (an agent's tool call answers on later turns, its transactions in the session it captured). */
  async rehearse (base: string, fn: () => Promise<void>): Promise<BookingCommand[]> {
    const session: BookingSession = { mode: 'rehearse', base, keyed: false, n: 0, commands: [], decided: new Map(), used: new Set() }
    await this.within(session, fn)
    return session.commands
  }

  /** The commands of what a route declares it takes (RouteDef.declares), its claims named as its run will name them. */
  declared (base: string, asks: BookingAsk[]): BookingCommand[] {
    return asks.map((ask, n) => ({ op: 'take', claim: claimId(`${base}.${n}`, ask.items, this.#partitions), items: ask.items, ...(ask.holdMs !== undefined ? { hold_ms: ask.holdMs } : {}) }))
  }

  /** Decides a rehearsal's commands (none: at once); the session the handler then runs with. */
  async decide (base: string, commands: BookingCommand[], keyed: boolean): Promise<BookingSession> {
    const decided: BookingSession['decided'] = new Map()
    const items = new Map(commands.flatMap((c) => c.op === 'take' ? [[c.claim, JSON.stringify(c.items)] as const] : []))
    const decisions = commands.length === 0 ? [] : await this.#link.decide(base, commands)
    for (const [key, outcome] of decisions) decided.set(key, { outcome, ...(key.startsWith('take:') ? { items: items.get(key.slice(5))! } : {}) })
    return { mode: 'decided', base, keyed, n: 0, commands, decided, used: new Set() }
  }

  /** A dry run's session: checked here, booking nothing. */
  dry (): BookingSession {
    return { mode: 'dry', base: 'dry-run', keyed: false, n: 0, commands: [], decided: new Map(), used: new Set() }
  }

  /**
   * The session of the run under way, for work it goes on with on a later turn (an agent's tool call), which runs
   * each of its transactions within it again.
   */
  current (): BookingSession | undefined {
    return this.#session
  }

  /** Runs fn (synchronous: a handler, or one transaction) with the session's bookings. */
  within<T> (session: BookingSession | undefined, fn: () => T): T {
    const before = this.#session
    this.#session = session
    try {
      return fn()
    } finally {
      this.#session = before
    }
  }

  /**
   * Gives back the claims a decided session took that no committed transaction of its run kept (the run went
   * otherwise, or failed and rolled back): a request books what its answer says, nothing beside it.
   */
  giveBackUnused (session: BookingSession): void {
    if (session.keyed) return
    const left: BookingCommand[] = []
    for (const c of session.commands) {
      if (c.op !== 'take' || session.used.has(c.claim) || session.decided.get(`take:${c.claim}`)?.outcome.ok !== true) continue
      left.push({ op: 'give', claim: c.claim, why: c.hold_ms !== undefined ? 'release' : 'rebook' })
    }
    if (left.length > 0) this.#link.decide(`${session.base}:unused`, left).catch(() => {})
  }

  take (store: Store, items: BookingItem[], holdMs: number | undefined): ReturnType<Bookings['take']> {
    const s = this.#session
    // An agent's tool books on later turns, outside any session: not through a cluster yet.
    if (s === undefined) return { refused: UNKNOWN }
    if (s.mode === 'dry') {
      const short = shortfall(store, items)
      return short !== undefined ? { short } : { claim: `${s.base}.${s.n++}` }
    }
    const claim = claimId(`${s.base}.${s.n++}`, items, this.#partitions)
    if (s.mode === 'rehearse') {
      s.commands.push({ op: 'take', claim, items, ...(holdMs !== undefined ? { hold_ms: holdMs } : {}) })
      return { claim }
    }
    const decided = s.decided.get(`take:${claim}`)
    // The catalog moved between the rehearsal and the run: what was decided is not what the run asks for.
    if (decided === undefined || decided.items !== JSON.stringify(items)) return { refused: UNKNOWN }
    store.afterCommit(() => s.used.add(claim))
    const o = decided.outcome
    return o.ok ? { claim } : o.reason === 'capacity_unavailable' ? { short: o.short } : { refused: o }
  }

  give (store: Store, claim: string, why: 'release' | 'expire' | 'rebook'): ClaimOutcome {
    // A hold's lapse is decided by the claims log's time, whoever asks: the record follows what it decided.
    if (why === 'expire') {
      const state = store.capacityClaims.get(claim)?.state
      if (state === 'expired') return { ok: true }
      if (state === 'held' || state === 'pending') {
        this.#link.expire(claim)
        return { ok: false, reason: 'pending' }
      }
      return { ok: false, reason: 'claim_gone' }
    }
    if (why === 'rebook') return this.#rebook(store, claim)
    return this.#step(store, { op: 'give', claim, why: 'release' }, (state) => state === 'held')
  }

  /**
   * A firm booking given back to be booked again (a placement's spots changed): given only once the run that took the
   * new spots has committed, so that a run refused or failed after it leaves the booking as it was. Until then both
   * are counted: near a full day a change a node alone would fit is refused, and nothing is sold twice.
   */
  #rebook (store: Store, claim: string): ClaimOutcome {
    const s = this.#session
    if (s === undefined) return UNKNOWN
    if (store.capacityClaims.get(claim)?.state !== 'firm') return { ok: false, reason: 'claim_gone' }
    if (s.mode === 'decided') store.afterCommit(() => { this.#link.decide(`${s.base}:rebook`, [{ op: 'give', claim, why: 'rebook' }]).catch(() => {}) })
    return { ok: true }
  }

  keep (store: Store, claim: string): ClaimOutcome {
    return this.#step(store, { op: 'keep', claim }, (state) => state === 'held' || state === 'firm')
  }

  /** A give or keep: recorded when rehearsing, answered as decided, or (dry) as this node's copy says it would go. */
  #step (store: Store, command: Extract<BookingCommand, { op: 'give' | 'keep' }>, wouldGo: (state: string | undefined) => boolean): ClaimOutcome {
    const s = this.#session
    if (s === undefined) return UNKNOWN
    if (s.mode === 'dry') return wouldGo(store.capacityClaims.get(command.claim)?.state) ? { ok: true } : { ok: false, reason: 'claim_gone' }
    if (s.mode === 'rehearse') {
      s.commands.push(command)
      return { ok: true }
    }
    return s.decided.get(`${command.op}:${command.claim}`)?.outcome ?? UNKNOWN
  }
}
