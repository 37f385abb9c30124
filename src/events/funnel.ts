import type { FunnelEvent } from '../generated/types.js'
import type { Store } from '../store/store.js'

/**
 * Deletes up to `limit` of the logged events up to and including `last`, once ClickHouse holds them, oldest first;
 * answers how many. Call inside Store.write.
 */
export function dropShipped (store: Store, last: number, limit = Infinity): number {
  let dropped = 0
  for (const key of store.funnel.getKeys({ end: last + 1, limit })) {
    store.funnel.removeSync(key)
    dropped++
  }
  return dropped
}

/** Events one millisecond can hold before ids borrow the next millisecond (ids stay unique and ordered). */
const PER_MS = 1000
/** Below this many waiting events size() counts them exactly (under 2 ms); above, it keeps a running count. */
const EXACT_BELOW = 100_000n
/** Slots of the shared counters. */
const LAST = 0
const COMMITTED = 1
const PENDING = 2

/**
 * The funnel log: request, bid_received, auction, render_started and play_completed events, appended inside the
 * transaction of what caused them (a rolled-back request leaves none) and shipped to ClickHouse by the analytics
 * process, which deletes them once ClickHouse has them. Each event's id is ms x 1000 + a sequence: ordered by time,
 * unique, later than anything before a restart (no high-water mark to write), and carried into ClickHouse so that a
 * retried batch is recognized.
 */
export class FunnelLog {
  readonly #store: Store
  /** Shared by the hot threads: [the last id given, the last id committed, events waiting (see size)]. */
  readonly #counters: BigInt64Array

  readonly #committed: (event: FunnelEvent) => void

  /**
   * buffer: another thread's counters (its FunnelLog over the same store); committed: told of each event once its
   * transaction has committed (the thread's metrics count plays and proofs there, so a dry run counts nothing).
   */
  constructor (store: Store, buffer?: SharedArrayBuffer, committed: (event: FunnelEvent) => void = () => {}) {
    this.#store = store
    this.#committed = committed
    this.#counters = new BigInt64Array(buffer ?? new SharedArrayBuffer(3 * 8))
    if (buffer === undefined) {
      const [last] = [...store.funnel.getKeys({ reverse: true, limit: 1 })] as number[]
      if (last !== undefined) this.#counters[LAST] = this.#counters[COMMITTED] = BigInt(last)
      this.#counters[PENDING] = BigInt(store.funnel.getCount())
    }
  }

  /** The memory to hand a hot thread's FunnelLog. */
  get buffer (): SharedArrayBuffer {
    return this.#counters.buffer as SharedArrayBuffer
  }

  /**
   * Appends an event; call inside Store.write. Returns its id. Ids are given out under LMDB's write lock, which every
   * thread's transaction holds, so they are unique and commit in order whichever thread appends.
   */
  append (event: FunnelEvent): number {
    const id = Math.max(Number(Atomics.load(this.#counters, LAST)) + 1, event.at * PER_MS)
    Atomics.store(this.#counters, LAST, BigInt(id))
    this.#store.funnel.putSync(id, event)
    this.#store.afterCommit(() => {
      const committed = BigInt(id)
      for (let seen = Atomics.load(this.#counters, COMMITTED); seen < committed;) {
        const was = Atomics.compareExchange(this.#counters, COMMITTED, seen, committed)
        if (was === seen) break
        seen = was
      }
      Atomics.add(this.#counters, PENDING, 1n)
      this.#committed(event)
    })
    return id
  }

  /** Up to limit events after `after` (an id), oldest first. */
  read (limit: number, after = 0): Array<{ id: number, event: FunnelEvent }> {
    return [...this.#store.funnel.getRange({ start: after + 1, limit })].map(({ key, value }) => ({ id: key, event: value }))
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
    const [first] = [...this.#store.funnel.getKeys({ limit: 1 })] as number[]
    return first !== undefined ? Math.max(0, (now - Math.floor(first / PER_MS)) / 1000) : 0
  }

  /**
   * Events waiting to be shipped, for /metrics and /readyz. Counting keys costs about 20 ns each (2 s with 100M
   * waiting, as a long ClickHouse outage leaves), so a large backlog is a running count; it is off by at most a batch
   * when the analytics process dies between deleting a batch and reporting it, and is counted exactly again once the
   * backlog is small.
   */
  size (): number {
    if (Atomics.load(this.#counters, PENDING) < EXACT_BELOW) Atomics.store(this.#counters, PENDING, BigInt(this.#store.funnel.getCount()))
    return Number(Atomics.load(this.#counters, PENDING))
  }
}
