import type { Logger } from '../log.js'
import { countLogged, dropShipped, loggedEvents } from '../events/funnel.js'
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
/** Shipped records deleted per transaction: a few milliseconds of LMDB's writer lock each. */
const DROP_CHUNK = 5000

/**
 * Ships the LMDB funnel log to ClickHouse from the analytics process, oldest first, in batches of whole records. A
 * batch is deleted from LMDB only after ClickHouse has every row of it. Inserts are idempotent: a batch that may have
 * reached ClickHouse in part before (the first batch of this process, which may follow one killed between insert and
 * delete, and any batch after a failure) first asks each table which event ids of the batch it already holds and
 * inserts only the rest. Each table's insert is one block, which ClickHouse writes whole or not at all, so an event
 * is either entirely in a table or not in it. When ClickHouse is down the log grows and the shipper retries with
 * backoff.
 */
export class Shipper {
  readonly #store: Store
  readonly #backend: Backend
  readonly #target: SchemaTarget
  readonly #log: Logger
  readonly #rows: RowBuilder
  #stopped = false
  /**
   * Whether events in the log may already be in ClickHouse: at start (a process killed between an insert and its
   * delete left them) and after any failed batch (some of its tables may have taken their rows). Otherwise nothing in
   * the log was ever sent, and the check, a query per table and batch (about 1 us an event of a 50k batch), is skipped.
   */
  #maybeSent = true
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
    try {
      const count = await this.#shipBatch()
      this.#maybeSent = false
      return count
    } catch (err) {
      this.#maybeSent = true
      throw err
    }
  }

  async #shipBatch (): Promise<number> {
    // Read and turned into rows one at a time: a batch of decoded events kept whole costs the collector more.
    let count = 0
    let first = 0
    let last = 0
    let minTs = Infinity
    let maxTs = 0
    for (const { id, event, recordEnd } of loggedEvents(this.#store)) {
      if (count++ === 0) first = id
      last = id
      this.#rows.add(id, event)
      const ts = seconds(event.at)
      if (ts < minTs) minTs = ts
      if (ts > maxTs) maxTs = ts
      if (count >= BATCH && recordEnd) break
    }
    // The read snapshot ends now, not at the next turn after the inserts: while a reader holds a snapshot, no page
    // freed since can be reused, and every commit of the hot threads then pays to save the grown freelist (measured:
    // a 100 ms hold every 5 s made a bid's four-table commit cost 29-34 us of CPU instead of 17).
    this.#store.refresh()
    if (count === 0) return 0
    for (const [table, rows] of this.#rows.take()) {
      const name = tableName(this.#target, table)
      let text = rows.text()
      if (this.#maybeSent) {
        const present = await this.#backend.query(`SELECT DISTINCT event_id FROM ${name} WHERE ts BETWEEN toDateTime({min_ts:UInt32}) AND toDateTime({max_ts:UInt32}) AND event_id BETWEEN {first:UInt64} AND {last:UInt64}`, { min_ts: minTs, max_ts: maxTs, first, last })
        const have = new Set(present.map((r) => Number(r.event_id)))
        text = rows.text((id) => !have.has(id))
      }
      if (text.length > 0) await this.#backend.insert(name, RAW[table]!, text)
    }
    // In transactions of DROP_CHUNK records: one over a whole batch held LMDB's writer lock 68 ms for 100k events, and
    // every hot thread's commit at the end of its turn waited behind it.
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
      // Counting stops at MIN_BATCH: a backlog of 100M would take seconds.
      const waiting = countLogged(this.#store, MIN_BATCH)
      const any = waiting > 0
      const full = waiting >= MIN_BATCH
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
