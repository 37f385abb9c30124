import { unpack } from 'msgpackr'
import type { Consumer, JsMsg } from 'nats'
import { FUNNEL_STREAM, FUNNEL_WORKING_MS, type FunnelStream } from '../cluster/funnel-stream.js'
import { retryWithBackoff } from '../retry.js'
import type { ScreenRecord } from '../inventory/records.js'
import type { Logger } from '../log.js'
import type { Backend } from './backends.js'
import { loadRows } from './load.js'
import { RowBuilder } from './rows.js'
import type { SchemaTarget } from './schema.js'
import { emptySpan, widen } from './sink.js'
import { seconds } from './sql.js'
import type { FunnelMessage } from './stream-sink.js'

/** Messages asked for at a time: up to 100k events, the shipper's batch, loaded as one insert per table. */
const FETCH_MESSAGES = 100
/** How long a fetch waits for messages when fewer are there: the loader's pace when the stream is quiet. */
const FETCH_WAIT_MS = 1000

/**
 * Loads the cluster's funnel stream into this node's own ClickHouse from the analytics process, from this node's
 * durable consumer: every event once, whichever node logged it. A batch is acknowledged only once ClickHouse holds it,
 * so a loader that dies redelivers it to itself. Before inserting, it asks ClickHouse which of the batch's events it
 * holds whenever some may be there: at start and after a failure, for a message the engine gives again, for the first
 * message of each node since start, and for one that does not begin past the last event loaded of its node (its node
 * sent part of a batch again, cut differently, after a restart).
 */
export class StreamLoader {
  readonly #stream: FunnelStream
  readonly #backend: Backend
  readonly #target: SchemaTarget
  readonly #log: Logger
  readonly #rows: RowBuilder
  /** The last event id loaded of each node since start. */
  readonly #lastOf = new Map<string, number>()
  #maybeLoaded = true
  /** The consumer's handle, looked up (an engine request) once and again after a failure, not at every fetch. */
  #consumer: Consumer | undefined
  #stopped = false
  #current: Promise<number> = Promise.resolve(0)
  loaded = 0

  constructor (stream: FunnelStream, backend: Backend, target: SchemaTarget, screen: (id: string) => ScreenRecord | undefined, log: Logger) {
    this.#stream = stream
    this.#backend = backend
    this.#target = target
    this.#log = log
    this.#rows = new RowBuilder(screen)
  }

  /** Loads one fetch of messages once any load in progress is done; the number of events it loaded. */
  loadOnce (waitMs = FETCH_WAIT_MS): Promise<number> {
    const next = this.#current.then(() => this.#load(waitMs), () => this.#load(waitMs))
    this.#current = next
    return next
  }

  async #load (waitMs: number): Promise<number> {
    try {
      const count = await this.#fetchAndLoad(waitMs)
      if (count > 0) this.#maybeLoaded = false
      return count
    } catch (err) {
      this.#maybeLoaded = true
      this.#consumer = undefined
      throw err
    }
  }

  async #fetchAndLoad (waitMs: number): Promise<number> {
    const consumer = this.#consumer ??= await this.#stream.js.consumers.get(FUNNEL_STREAM, this.#stream.consumer)
    const got: JsMsg[] = []
    const span = emptySpan()
    const lastOf = new Map<string, number>()
    let check = this.#maybeLoaded
    let count = 0
    for await (const m of await consumer.fetch({ max_messages: FETCH_MESSAGES, expires: waitMs })) {
      got.push(m)
      const { node, records } = unpack(m.data) as FunnelMessage
      const before = lastOf.get(node) ?? this.#lastOf.get(node)
      if (m.redelivered || before === undefined || records[0]![0] <= before) check = true
      this.#rows.from(node)
      for (const [first, events] of records) {
        for (let i = 0; i < events.length; i++) {
          this.#rows.add(first + i, events[i]!)
          widen(span, first + i, seconds(events[i]!.at))
        }
        count += events.length
        lastOf.set(node, Math.max(lastOf.get(node) ?? 0, first + events.length - 1))
      }
    }
    if (got.length === 0) return 0
    const working = setInterval(() => { for (const m of got) m.working() }, FUNNEL_WORKING_MS)
    try {
      await loadRows(this.#backend, this.#target, this.#rows.take(), span, check)
    } catch (err) {
      // Given again at once rather than after the acknowledgement wait, marked as given before.
      for (const m of got) m.nak()
      throw err
    } finally {
      clearInterval(working)
    }
    // Acknowledged once ClickHouse holds them; the last one waits for the engine's answer, the others ride before it.
    for (const m of got.slice(0, -1)) m.ack()
    await got[got.length - 1]!.ackAck()
    for (const [node, last] of lastOf) this.#lastOf.set(node, Math.max(last, this.#lastOf.get(node) ?? 0))
    this.loaded += count
    return count
  }

  /** Loads until the consumer has nothing left and nothing in flight: drain(). */
  async catchUp (): Promise<void> {
    for (;;) {
      const loaded = await this.loadOnce(200)
      const info = await this.#stream.jsm.consumers.info(FUNNEL_STREAM, this.#stream.consumer)
      if (loaded === 0 && info.num_pending === 0 && info.num_ack_pending === 0) return
      if (loaded === 0) await new Promise((resolve) => setTimeout(resolve, 100))
    }
  }

  /** Loads as messages arrive until stopped, backing off while ClickHouse or the engine fails. */
  async run (): Promise<void> {
    while (!this.#stopped) {
      await retryWithBackoff(() => this.loadOnce(), () => this.#stopped, (err, retryInMs) => this.#log.warn('loading the funnel stream into ClickHouse failed; it waits in the stream', { error: err instanceof Error ? err.message : String(err), retry_in_ms: retryInMs }))
    }
  }

  stop (): void {
    this.#stopped = true
  }
}
