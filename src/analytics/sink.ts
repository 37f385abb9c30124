import type { FunnelEvent } from '../generated/types.js'

/** Where the shipper sends the log's events: ClickHouse itself (src/analytics/load.ts), or on a cluster the funnel stream. */
export interface Sink {
  /** One event of the batch being read, in id order; recordEnd: the last of its record. */
  add (id: number, event: FunnelEvent, recordEnd: boolean): void
  /** Sends what was added since the last send and resolves once it is held; maybeSent: some of it may have been sent before. */
  send (span: Span, maybeSent: boolean): Promise<void>
}

/** The ids and times a batch's events span, which bound the query for those already loaded. */
export interface Span {
  first: number
  last: number
  minTs: number
  maxTs: number
}

/** A span that grows as events are added. */
export function emptySpan (): Span {
  return { first: Infinity, last: 0, minTs: Infinity, maxTs: 0 }
}

export function widen (span: Span, id: number, ts: number): void {
  if (id < span.first) span.first = id
  if (id > span.last) span.last = id
  if (ts < span.minTs) span.minTs = ts
  if (ts > span.maxTs) span.maxTs = ts
}
