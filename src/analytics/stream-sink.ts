import { pack } from 'msgpackr'
import type { JetStreamClient } from 'nats'
import { FUNNEL_SUBJECT } from '../cluster/funnel-stream.js'
import type { FunnelEvent } from '../generated/types.js'
import type { Sink } from './sink.js'

/** A message of the funnel stream: the node that logged its events, and its records (first id, events in id order). */
export interface FunnelMessage {
  node: string
  records: Array<[first: number, events: FunnelEvent[]]>
}

/**
 * Events a message holds at most (whole records, so a few more): 1,000 funnel events pack into 100-300 KB, under the
 * engine's 1 MB message limit; a message that packs larger is split (a turn's bid responses can carry many bids).
 */
const MESSAGE_EVENTS = 1000
const MESSAGE_BYTES = 900_000

/**
 * The shipper's sink on a cluster node: the log's events go to the funnel stream, from which every node's loader puts
 * them in ClickHouse (src/analytics/stream-loader.ts). Messages are published one at a time, each once the one before
 * is acknowledged by the engine's quorum, so a node's events are in the stream in their order. A message's id names
 * its node and its first and last event, so one sent again after a lost acknowledgement is dropped by the engine's
 * duplicate window; a batch sent again after a restart may be cut differently, and the loader drops the events it
 * holds already.
 */
export class StreamSink implements Sink {
  readonly #js: JetStreamClient
  readonly #node: string
  readonly #timeoutMs: number
  #records: FunnelMessage['records'] = []
  #events = 0
  #open: [number, FunnelEvent[]] | undefined
  #messages: Array<{ data: Uint8Array, first: number, last: number }> = []

  constructor (js: JetStreamClient, node: string, timeoutMs: number) {
    this.#js = js
    this.#node = node
    this.#timeoutMs = timeoutMs
  }

  add (id: number, event: FunnelEvent, recordEnd: boolean): void {
    this.#open ??= [id, []]
    this.#open[1].push(event)
    this.#events++
    if (!recordEnd) return
    this.#records.push(this.#open)
    this.#open = undefined
    if (this.#events >= MESSAGE_EVENTS) this.#seal()
  }

  #seal (): void {
    if (this.#open !== undefined) this.#records.push(this.#open)
    this.#open = undefined
    if (this.#records.length > 0) this.#pack(this.#records)
    this.#records = []
    this.#events = 0
  }

  #pack (records: FunnelMessage['records']): void {
    const data = pack({ node: this.#node, records } satisfies FunnelMessage)
    if (data.length > MESSAGE_BYTES && records.length > 1) {
      const half = Math.ceil(records.length / 2)
      this.#pack(records.slice(0, half))
      this.#pack(records.slice(half))
      return
    }
    const [first] = records[0]!
    const [start, events] = records[records.length - 1]!
    this.#messages.push({ data, first, last: start + events.length - 1 })
  }

  async send (): Promise<void> {
    this.#seal()
    const messages = this.#messages
    this.#messages = []
    for (const m of messages) {
      await this.#js.publish(`${FUNNEL_SUBJECT}.${this.#node}`, m.data, { msgID: `${this.#node}.${m.first}.${m.last}`, timeout: this.#timeoutMs })
    }
  }
}
