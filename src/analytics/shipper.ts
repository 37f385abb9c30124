import type { Logger } from '../log.js'
import { dropShipped } from '../events/funnel.js'
import type { Store } from '../store/store.js'
import type { Backend } from './backends.js'
import { RowBuilder } from './rows.js'
import { seconds } from './sql.js'
import { RAW, tableName, type SchemaTarget } from './schema.js'

/**
 * Events per batch. Measured: 100k halves the insert time of 20k batches (fewer, larger blocks for the materialized
 * views to fold), and a batch of 100k rows is tens of MB, shipped in about a second.
 */
export const BATCH = 100_000
/**
 * When a partial batch ships: once this many events wait, or once events have waited this long. Each ship has a
 * fixed cost whatever its size: a dedupe query and an insert per table, each insert writing a part to the raw table
 * and to every rollup its materialized views feed (about 36 ms of CPU for bids in chDB), and a transaction deleting
 * what was shipped. Measured with bid_received events (the shipper's own CPU, chDB's threads included): batches of
 * 7,000 cost 10.1 us an event, batches of 35,000 5.9-7.0. Shipping a trickle every second made an idle demo market
 * cost the analytics process 31 ms of CPU a second. Reports are cached 5 minutes, so 30 s before an event reaches
 * ClickHouse changes nothing a reader sees; tests and benchmarks ship at once with drain().
 */
const MIN_BATCH = BATCH
const MAX_WAIT_MS = 30_000
/** How often the shipper looks at the log while it waits. */
const POLL_MS = 1000
const MAX_BACKOFF_MS = 30_000
/** Shipped events deleted per transaction: about 3 ms of LMDB's writer lock each. */
const DROP_CHUNK = 5000

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
    // Read and turned into rows one at a time: a batch of decoded events kept whole costs the collector more.
    let count = 0
    let first = 0
    let last = 0
    let minTs = Infinity
    let maxTs = 0
    for (const { key, value } of this.#store.funnel.getRange({ limit: BATCH })) {
      if (count++ === 0) first = key
      last = key
      this.#rows.add(key, value)
      const ts = seconds(value.at)
      if (ts < minTs) minTs = ts
      if (ts > maxTs) maxTs = ts
    }
    // The read snapshot ends now, not at the next turn after the inserts: while a reader holds a snapshot, no page
    // freed since can be reused, and every commit of the hot threads then pays to save the grown freelist (measured:
    // a 100 ms hold every 5 s made a bid's four-table commit cost 29-34 us of CPU instead of 17).
    this.#store.refresh()
    if (count === 0) return 0
    for (const [table, rows] of this.#rows.take()) {
      const name = tableName(this.#target, table)
      const present = await this.#backend.query(`SELECT DISTINCT event_id FROM ${name} WHERE ts BETWEEN toDateTime({min_ts:UInt32}) AND toDateTime({max_ts:UInt32}) AND event_id BETWEEN {first:UInt64} AND {last:UInt64}`, { min_ts: minTs, max_ts: maxTs, first, last })
      const have = new Set(present.map((r) => Number(r.event_id)))
      const text = rows.text((id) => !have.has(id))
      if (text.length > 0) await this.#backend.insert(name, RAW[table]!, text)
    }
    // In transactions of DROP_CHUNK: one over a whole batch held LMDB's writer lock 68 ms for 100k events, and every
    // hot thread's commit at the end of its turn waited behind it.
    while (this.#store.write(() => dropShipped(this.#store, last, DROP_CHUNK)) === DROP_CHUNK) await new Promise((resolve) => setImmediate(resolve))
    this.shipped += count
    this.#onShipped(count)
    return count
  }

  /** Resolves once a batch is due: MIN_BATCH events wait, or some have waited MAX_WAIT_MS (or the shipper stopped). */
  async #due (): Promise<void> {
    let since: number | undefined
    while (!this.#stopped) {
      await new Promise((resolve) => setTimeout(resolve, POLL_MS))
      // Skipping to the MIN_BATCH-th key costs about a millisecond; counting a backlog of 100M would take seconds.
      const any = [...this.#store.funnel.getKeys({ limit: 1 })].length > 0
      const full = any && [...this.#store.funnel.getKeys({ offset: MIN_BATCH - 1, limit: 1 })].length > 0
      this.#store.refresh()
      if (!any) continue
      since ??= Date.now()
      if (full || Date.now() - since >= MAX_WAIT_MS) return
    }
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
        if (moved < BATCH) await this.#due()
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
