import type { FunnelEvent } from '../generated/types.js'
import type { Store } from '../store/store.js'

/** Events one millisecond can hold before ids borrow the next millisecond (ids stay unique and ordered). */
const PER_MS = 1000
/** Below this many waiting events size() counts them exactly (under 2 ms); above, it keeps a running count. */
const EXACT_BELOW = 100_000

/**
 * The funnel log: request, bid_received, auction, render_started and play_completed events, appended inside the
 * transaction of what caused them (a rolled-back request leaves none) and shipped to ClickHouse by the analytics
 * process, which deletes them once ClickHouse has them. Each event's id is ms x 1000 + a sequence: ordered by time,
 * unique, later than anything before a restart (no high-water mark to write), and carried into ClickHouse so that a
 * retried batch is recognized.
 */
export class FunnelLog {
  readonly #store: Store
  #last = 0
  #committed = 0
  /** Events waiting: appends add, the analytics process's shipped reports subtract (see size). */
  #pending: number

  constructor (store: Store) {
    this.#store = store
    const [last] = [...store.funnel.getKeys({ reverse: true, limit: 1 })] as number[]
    if (last !== undefined) this.#last = this.#committed = last
    this.#pending = store.funnel.getCount()
  }

  /** Appends an event; call inside Store.write. Returns its id. */
  append (event: FunnelEvent): number {
    const id = Math.max(this.#last + 1, event.at * PER_MS)
    this.#last = id
    this.#store.funnel.putSync(id, event)
    this.#store.afterCommit(() => {
      if (id > this.#committed) this.#committed = id
      this.#pending++
    })
    return id
  }

  /** Up to limit events after `after` (an id), oldest first. */
  read (limit: number, after = 0): Array<{ id: number, event: FunnelEvent }> {
    return [...this.#store.funnel.getRange({ start: after + 1, limit })].map(({ key, value }) => ({ id: key, event: value }))
  }

  /** Deletes every event up to and including id (the shipper, once ClickHouse has them); call inside Store.write. */
  trim (upTo: number): void {
    for (const key of this.#store.funnel.getKeys({ end: upTo + 1 })) this.#store.funnel.removeSync(key)
  }

  /** The id of the last event committed (0 before any): it moves exactly when an append commits. */
  get lastId (): number {
    return this.#committed
  }

  /** The analytics process deleted count shipped events. */
  shipped (count: number): void {
    this.#pending = Math.max(0, this.#pending - count)
  }

  /**
   * Events waiting to be shipped, for /metrics and /readyz. Counting keys costs about 20 ns each (2 s with 100M
   * waiting, as a long ClickHouse outage leaves), so a large backlog is a running count; it is off by at most a batch
   * when the analytics process dies between deleting a batch and reporting it, and is counted exactly again once the
   * backlog is small.
   */
  size (): number {
    if (this.#pending < EXACT_BELOW) this.#pending = this.#store.funnel.getCount()
    return this.#pending
  }
}
