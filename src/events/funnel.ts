import type { FunnelEvent } from '../generated/types.js'
import { rewriteInBatches } from '../store/rewrite.js'
import type { Store } from '../store/store.js'

/**
 * Events one record holds at most. A transaction's events go into one record, not one entry each: a turn of a hot
 * thread's bids costs one put, and the analytics process decodes and deletes a record per turn instead of an entry per
 * event (deleting 50k entries one by one cost it 2.3 us an event). Twelve auction events encode in about 1.7 KB and
 * twelve one-bid responses in 1.1 KB, under LMDB's 2 KB node size, so records share leaf pages; sixteen auctions
 * (2.3 KB) would each take a page of their own.
 */
export const RECORD_EVENTS = 12

/**
 * Deletes up to `limit` records whose events are all at or before `last`, once ClickHouse holds them, oldest first;
 * answers how many records. The analytics process ships whole records, so a record is never split. Call inside
 * Store.write.
 */
export function dropShipped (store: Store, last: number, limit = Infinity): number {
  let dropped = 0
  for (const key of store.funnel.getKeys({ end: [last + 1], limit })) {
    store.funnel.removeSync(key)
    dropped++
  }
  return dropped
}

/** Shipped records deleted per transaction: a few milliseconds of LMDB's writer lock each. */
const DROP_CHUNK = 5000

/**
 * Deletes every record whose events are all at or before `last`, in transactions of DROP_CHUNK records: one over a
 * whole batch held LMDB's writer lock 68 ms for 100k events, and every hot thread's commit waited behind it.
 */
export async function dropAllShipped (store: Store, last: number): Promise<void> {
  while (store.write(() => dropShipped(store, last, DROP_CHUNK)) === DROP_CHUNK) await new Promise((resolve) => setImmediate(resolve))
}

/** A logged event: its id, and whether it is the last of its record (where a batch may end). */
export interface LoggedEvent {
  id: number
  event: FunnelEvent
  recordEnd: boolean
}

/** The logged events after an id, oldest first. */
export function * loggedEvents (store: Store, after = 0): Generator<LoggedEvent> {
  // A record that starts before `after` may hold events after it.
  for (const { key: [first], value } of store.funnel.getRange({ start: [after - RECORD_EVENTS + 1] })) {
    for (let i = 0; i < value.length; i++) {
      const id = first + i
      if (id > after) yield { id, event: value[i]!, recordEnd: i === value.length - 1 }
    }
  }
}

/** Events waiting in the log, counted from the records' keys; past atMost the count stops there. */
export function countLogged (store: Store, atMost = Infinity): number {
  let count = 0
  for (const [, n] of store.funnel.getKeys()) {
    count += n
    if (count >= atMost) break
  }
  return count
}

/**
 * Moves events an earlier version logged one entry each into records of one (their ids kept), so an upgrade ships
 * what was waiting. A batch at a time, each a few milliseconds of LMDB's writer lock.
 */
function adoptLegacyEvents (store: Store): void {
  rewriteInBatches(store, store.legacyFunnel, (id, event) => {
    store.funnel.putSync([id, 1], [event])
    store.legacyFunnel.removeSync(id)
  })
}

/** Events one millisecond can hold before ids borrow the next millisecond (ids stay unique and ordered). */
const PER_MS = 1000
/** Below this many waiting events size() counts them exactly (under 2 ms); above, it keeps a running count. */
const EXACT_BELOW = 100_000
/** Slots of the shared counters. */
const LAST = 0
const COMMITTED = 1
const PENDING = 2

/**
 * The funnel log: request, bid_received, auction, render_started and play_completed events, appended inside the
 * transaction of what caused them (a rolled-back request leaves none) and shipped to ClickHouse by the analytics
 * process, which deletes them once ClickHouse has them. Each event's id is ms x 1000 + a sequence: ordered by time,
 * unique, later than anything before a restart (no high-water mark to write), and carried into ClickHouse so that a
 * retried batch is recognized. A transaction's events are stored as records of up to RECORD_EVENTS, written as the
 * transaction commits, and a record's events have consecutive ids.
 */
export class FunnelLog {
  readonly #store: Store
  /** Shared by the hot threads: [the last id given, the last id committed, events waiting (see size)]. */
  readonly #counters: BigInt64Array
  readonly #committed: (event: FunnelEvent) => void
  /** The events of the open transaction not yet in a record, and the id of the first. */
  #open: FunnelEvent[] = []
  #first = 0

  /**
   * buffer: another thread's counters (its FunnelLog over the same store); committed: told of each event once its
   * transaction has committed (the thread's metrics count plays and proofs there, so a dry run counts nothing).
   */
  constructor (store: Store, buffer?: SharedArrayBuffer, committed: (event: FunnelEvent) => void = () => {}) {
    this.#store = store
    this.#committed = committed
    this.#counters = new BigInt64Array(buffer ?? new SharedArrayBuffer(3 * 8))
    if (buffer === undefined) {
      adoptLegacyEvents(store)
      const [last] = [...store.funnel.getKeys({ reverse: true, limit: 1 })]
      if (last !== undefined) this.#counters[LAST] = this.#counters[COMMITTED] = BigInt(last[0] + last[1] - 1)
      this.#counters[PENDING] = BigInt(countLogged(store))
    }
  }

  /** The memory to hand a hot thread's FunnelLog. */
  get buffer (): SharedArrayBuffer {
    return this.#counters.buffer as SharedArrayBuffer
  }

  /**
   * Appends an event to the open transaction's record (one is opened if none is). Returns its id. Ids are given out
   * under LMDB's write lock, which every thread's transaction holds, so they are unique and commit in order whichever
   * thread appends.
   */
  append (event: FunnelEvent): number {
    if (!this.#store.inTransaction) return this.#store.write(() => this.append(event))
    const last = Number(Atomics.load(this.#counters, LAST))
    // A full record is written now; so is one another FunnelLog over this store broke the ids of by appending.
    if (this.#open.length === RECORD_EVENTS || (this.#open.length > 0 && last !== this.#first + this.#open.length - 1)) this.#seal()
    if (this.#open.length === 0) {
      this.#first = Math.max(last + 1, event.at * PER_MS)
      this.#store.beforeCommit(() => this.#seal())
      this.#store.afterEnd(() => { this.#open = [] })
    }
    const id = this.#first + this.#open.length
    Atomics.store(this.#counters, LAST, BigInt(id))
    this.#open.push(event)
    return id
  }

  /** Writes the open events as a record. */
  #seal (): void {
    const events = this.#open
    if (events.length === 0) return
    this.#open = []
    const last = this.#first + events.length - 1
    this.#store.funnel.putSync([this.#first, events.length], events)
    this.#store.afterCommit(() => {
      const committed = BigInt(last)
      for (let seen = Atomics.load(this.#counters, COMMITTED); seen < committed;) {
        const was = Atomics.compareExchange(this.#counters, COMMITTED, seen, committed)
        if (was === seen) break
        seen = was
      }
      Atomics.add(this.#counters, PENDING, BigInt(events.length))
      for (const event of events) this.#committed(event)
    })
  }

  /** Up to limit events after `after` (an id), oldest first. */
  read (limit: number, after = 0): Array<{ id: number, event: FunnelEvent }> {
    const out: Array<{ id: number, event: FunnelEvent }> = []
    for (const { id, event } of loggedEvents(this.#store, after)) {
      if (out.length === limit) break
      out.push({ id, event })
    }
    return out
  }

  /** The id of the last event committed (0 before any): it moves exactly when an append commits. */
  get lastId (): number {
    return Number(Atomics.load(this.#counters, COMMITTED))
  }

  /** The analytics process deleted count shipped events. */
  shipped (count: number): void {
    const left = Atomics.sub(this.#counters, PENDING, BigInt(count)) - BigInt(count)
    if (left < 0n) Atomics.compareExchange(this.#counters, PENDING, left, 0n)
  }

  /** How far ClickHouse lags at now: the age in seconds of the oldest event still waiting, 0 when none waits. */
  lagSeconds (now: number): number {
    const [first] = [...this.#store.funnel.getKeys({ limit: 1 })]
    return first !== undefined ? Math.max(0, (now - Math.floor(first[0] / PER_MS)) / 1000) : 0
  }

  /**
   * Events waiting to be shipped, for /metrics and /readyz. Counting costs about 20 ns a record (seconds with 100M
   * waiting, as a long ClickHouse outage leaves), so a large backlog is a running count; it is off by at most a batch
   * when the analytics process dies between deleting a batch and reporting it, and is counted exactly again once the
   * backlog is small.
   */
  size (): number {
    if (Atomics.load(this.#counters, PENDING) < BigInt(EXACT_BELOW)) Atomics.store(this.#counters, PENDING, BigInt(countLogged(this.#store)))
    return Number(Atomics.load(this.#counters, PENDING))
  }
}
