import { retryWithBackoff } from '../retry.js'
import type { Logger } from '../log.js'
import { countLogged, loggedEvents } from '../events/funnel.js'
import type { Store } from '../store/store.js'
import { emptySpan, widen, type Sink } from './sink.js'
import { seconds } from './sql.js'

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
 * cost the analytics process 31 ms of CPU a second. Reports are cached 5 minutes, so waiting 30 s (the default of
 * ANALYTICS_BATCH_SECONDS) before an event reaches ClickHouse changes nothing a reader sees; tests and benchmarks ship
 * at once with drain().
 */
const MIN_BATCH = BATCH
/** How often the shipper looks at the log while it waits. */
const POLL_MS = 1000

/**
 * Ships the LMDB funnel log from the analytics process to its sink, oldest first, in batches of whole records. A batch
 * is deleted from LMDB only after the sink holds every event of it. When the sink fails (ClickHouse or the engine
 * down) the log grows and the shipper retries with backoff; the batch it sends again may have reached the sink in
 * part, which the sink is told.
 */
export class Shipper {
  readonly #store: Store
  readonly #sink: Sink
  readonly #log: Logger
  /** How long events wait for a full batch (ANALYTICS_BATCH_SECONDS). */
  readonly #maxWaitMs: number
  #stopped = false
  /**
   * Whether events in the log may already be in the sink: at start (a process killed between a send and its delete
   * left them) and after any failed batch (some of its tables may have taken their rows). Otherwise nothing in the log
   * was ever sent, and the sink's check for them, a query per table and batch in ClickHouse (about 1 us an event of a
   * 50k batch), is skipped.
   */
  #maybeSent = true
  /** The batch being shipped: batches run one at a time, or two could read and send the same events. */
  #current: Promise<number> = Promise.resolve(0)
  shipped = 0

  readonly #onShipped: (count: number) => void
  /** Deletes the log's records up to an event id, resolving once they are gone (the service's writers do it). */
  readonly #drop: (last: number) => Promise<void>

  constructor (store: Store, sink: Sink, log: Logger, maxWaitMs: number, drop: (last: number) => Promise<void>, onShipped: (count: number) => void = () => {}) {
    this.#store = store
    this.#drop = drop
    this.#sink = sink
    this.#onShipped = onShipped
    this.#log = log
    this.#maxWaitMs = maxWaitMs
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
    // Read and handed over one at a time: a batch of decoded events kept whole costs the collector more.
    let count = 0
    const span = emptySpan()
    for (const { id, event, recordEnd } of loggedEvents(this.#store)) {
      count++
      this.#sink.add(id, event, recordEnd)
      widen(span, id, seconds(event.at))
      if (count >= BATCH && recordEnd) break
    }
    // The read snapshot ends now, not at the next turn after the sends: while a reader holds a snapshot, no page
    // freed since can be reused, and every commit of the hot threads then pays to save the grown freelist (measured:
    // a 100 ms hold every 5 s made a bid's four-table commit cost 29-34 us of CPU instead of 17).
    this.#store.refresh()
    if (count === 0) return 0
    await this.#sink.send(span, this.#maybeSent)
    await this.#drop(span.last)
    this.shipped += count
    this.#onShipped(count)
    return count
  }

  /** Resolves once a batch is due: MIN_BATCH events wait, or some have waited maxWaitMs (or the shipper stopped). */
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
      if (full || Date.now() - since >= this.#maxWaitMs) return
    }
  }

  /** Ships until the log is empty. */
  async drain (): Promise<void> {
    while (await this.shipOnce() > 0);
  }

  /** Ships as events arrive until stopped, backing off while the sink fails. */
  async run (): Promise<void> {
    while (!this.#stopped) {
      await retryWithBackoff(async () => {
        if (await this.shipOnce() < BATCH) await this.#due()
      }, () => this.#stopped, (err, retryInMs) => this.#log.warn('shipping the funnel log failed; events wait in LMDB', { error: err instanceof Error ? err.message : String(err), retry_in_ms: retryInMs }))
    }
  }

  stop (): void {
    this.#stopped = true
  }
}
