import type { FunnelEvent } from '../generated/types.js'
import type { ScreenRecord } from '../inventory/records.js'
import type { Backend } from './backends.js'
import { RowBuilder, type RowBatch } from './rows.js'
import type { Sink, Span } from './sink.js'
import { RAW, tableName, type SchemaTarget } from './schema.js'

/**
 * Inserts a batch's rows, each table's as one block, which ClickHouse writes whole or not at all. When some of its
 * events may be in ClickHouse already (check: a batch sent before, in part or whole, by a process that died before it
 * could note so), each table is first asked which events of the span it holds, and only the rest go in: an event is
 * (node, event_id), since ids are unique per node only. The one rule by which the log's shipper and the cluster's
 * funnel loader put an event in ClickHouse once.
 */
export async function loadRows (backend: Backend, target: SchemaTarget, batch: RowBatch, span: Span, check: boolean): Promise<void> {
  for (const [table, rows] of batch.tables) {
    const name = tableName(target, table)
    let text = rows.text()
    if (check) {
      const present = await backend.query(`SELECT DISTINCT node, event_id FROM ${name} WHERE ts BETWEEN toDateTime({min_ts:UInt32}) AND toDateTime({max_ts:UInt32}) AND event_id BETWEEN {first:UInt64} AND {last:UInt64}`, { min_ts: span.minTs, max_ts: span.maxTs, first: span.first, last: span.last })
      const have = new Set(present.map((r) => `${String(r.node)}\n${Number(r.event_id)}`))
      text = rows.text((id, origin) => !have.has(`${batch.nodes[origin]!}\n${id}`))
    }
    if (text.length > 0) await backend.insert(name, RAW[table]!, text)
  }
}

/** The shipper's sink where this node's events go straight into ClickHouse: a node alone, or nodes sharing one server. */
export class ClickHouseSink implements Sink {
  readonly #backend: Backend
  readonly #target: SchemaTarget
  readonly #rows: RowBuilder

  /** node: the node whose events these are, on a cluster sharing one ClickHouse ('' on a node alone). */
  constructor (backend: Backend, target: SchemaTarget, screen: (id: string) => ScreenRecord | undefined, node = '') {
    this.#backend = backend
    this.#target = target
    this.#rows = new RowBuilder(screen)
    this.#rows.from(node)
  }

  add (id: number, event: FunnelEvent): void {
    this.#rows.add(id, event)
  }

  async send (span: Span, maybeSent: boolean): Promise<void> {
    await loadRows(this.#backend, this.#target, this.#rows.take(), span, maybeSent)
  }
}
