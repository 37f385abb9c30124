import type { FunnelEvent } from '../generated/types.js'
import type { Store } from '../store/store.js'

/**
 * The funnel log: request, bid_received, render_started and play_completed events, appended inside the transaction
 * of what caused them (so a rolled-back request leaves none) and drained to ClickHouse by the analytics process.
 * Keys are [ms, sequence]: ordered by time, unique within this process, and later than anything before a restart,
 * so the log needs no high-water mark of its own.
 */
export class FunnelLog {
  readonly #store: Store
  #lastMs = 0
  #seq = 0

  constructor (store: Store) {
    this.#store = store
    const [last] = [...store.funnel.getKeys({ reverse: true, limit: 1 })] as unknown as Array<[number, number]>
    if (last !== undefined) {
      this.#lastMs = last[0]
      this.#seq = last[1] + 1
    }
  }

  /** Appends an event; call inside Store.write. */
  append (event: FunnelEvent): void {
    if (event.at > this.#lastMs) {
      this.#lastMs = event.at
      this.#seq = 0
    }
    this.#store.funnel.putSync([this.#lastMs, this.#seq++], event)
  }

  /** Events from the oldest on (for the analytics shipper and tests). */
  read (limit: number, after?: [number, number]): Array<{ key: [number, number], event: FunnelEvent }> {
    const range = after === undefined ? { limit } : { start: after, exclusiveStart: true, limit }
    return [...this.#store.funnel.getRange(range as never)].map(({ key, value }) => ({ key: key as unknown as [number, number], event: value }))
  }
}
