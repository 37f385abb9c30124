import type { Logger } from '../log.js'
import { dropShipped } from '../events/funnel.js'
import type { Store } from '../store/store.js'
import type { Backend } from './backends.js'
import { RowBuilder } from './rows.js'
import { seconds } from './sql.js'
import { tableName, type SchemaTarget } from './schema.js'

/**
 * Events per batch. Measured: 100k halves the insert time of 20k batches (fewer, larger blocks for the materialized
 * views to fold), and a batch of 100k rows is tens of MB, shipped in about a second.
 */
export const BATCH = 100_000
/**
 * How long the shipper waits when the log had less than a batch. Each ship has a fixed cost, a dedupe query and an
 * insert per table and a write transaction (LMDB's one writer lock, which the request path waits for) deleting what
 * was shipped. Measured under POST /bid load in alternating runs (bench/bid's path, c=50): shipping every 200 ms cost
 * 167-171 us of CPU per bid with p99 24-29 ms, every second 158-159 us with p99 20 ms. Reports are cached 5 minutes,
 * so a second before an event reaches ClickHouse changes nothing a reader sees.
 */
const IDLE_MS = 1000
const MAX_BACKOFF_MS = 30_000

/**
 * Ships the LMDB funnel log to ClickHouse from the analytics process, oldest first, in batches. A batch is deleted
 * from LMDB only after ClickHouse has every row of it. Inserts are idempotent: before inserting into a table, the
 * shipper asks which event ids of the batch the table already holds (a batch that failed after some tables, or a
 * process killed between insert and trim) and inserts only the rest. Each table's insert is one block, which ClickHouse
 * writes whole or not at all, so an event is either entirely in a table or not in it. When ClickHouse is down the log
 * grows and the shipper retries with backoff.
 */
export class Shipper {
  readonly #store: Store
  readonly #backend: Backend
  readonly #target: SchemaTarget
  readonly #log: Logger
  readonly #rows: RowBuilder
  #stopped = false
  /** The batch being shipped: batches run one at a time, or two could read and insert the same events. */
  #current: Promise<number> = Promise.resolve(0)
  shipped = 0

  readonly #onShipped: (count: number) => void

  constructor (store: Store, backend: Backend, target: SchemaTarget, log: Logger, onShipped: (count: number) => void = () => {}) {
    this.#store = store
    this.#onShipped = onShipped
    this.#backend = backend
    this.#target = target
    this.#log = log
    this.#rows = new RowBuilder((id) => store.screens.fresh(id))
  }

  /** Ships one batch once any batch in progress is done; the number of events it moved (0 when the log is empty). */
  shipOnce (): Promise<number> {
    const next = this.#current.then(() => this.#ship(), () => this.#ship())
    this.#current = next
    return next
  }

  async #ship (): Promise<number> {
    const events = [...this.#store.funnel.getRange({ limit: BATCH })]
    if (events.length === 0) return 0
    let minTs = Infinity
    let maxTs = 0
    for (const { key, value } of events) {
      this.#rows.add(key, value)
      minTs = Math.min(minTs, seconds(value.at))
      maxTs = Math.max(maxTs, seconds(value.at))
    }
    const first = events[0]!.key
    const last = events[events.length - 1]!.key
    for (const [table, rows] of this.#rows.take()) {
      const name = tableName(this.#target, table)
      const present = await this.#backend.query(`SELECT DISTINCT event_id FROM ${name} WHERE ts BETWEEN toDateTime({min_ts:UInt32}) AND toDateTime({max_ts:UInt32}) AND event_id BETWEEN {first:UInt64} AND {last:UInt64}`, { min_ts: minTs, max_ts: maxTs, first, last })
      const have = new Set(present.map((r) => Number(r.event_id)))
      const lines = have.size === 0 ? rows : rows.filter(([id]) => !have.has(id))
      if (lines.length > 0) await this.#backend.insert(name, lines.map(([, line]) => line).join('\n'))
    }
    this.#store.write(() => dropShipped(this.#store, last))
    this.shipped += events.length
    this.#onShipped(events.length)
    return events.length
  }

  /** Ships until the log is empty. */
  async drain (): Promise<void> {
    while (await this.shipOnce() > 0);
  }

  /** Ships as events arrive until stopped, backing off while ClickHouse fails. */
  async run (): Promise<void> {
    let backoff = 500
    while (!this.#stopped) {
      try {
        const moved = await this.shipOnce()
        backoff = 500
        if (moved < BATCH) await new Promise((resolve) => setTimeout(resolve, IDLE_MS))
      } catch (err) {
        this.#log.warn('shipping to ClickHouse failed; events wait in LMDB', { error: err instanceof Error ? err.message : String(err), retry_in_ms: backoff })
        await new Promise((resolve) => setTimeout(resolve, backoff))
        backoff = Math.min(MAX_BACKOFF_MS, backoff * 2)
      }
    }
  }

  stop (): void {
    this.#stopped = true
  }
}
