// The funnel log's storage shape and its tables.
import { table } from '../store/table.js'
import type { FunnelEvent } from '../generated/types.js'

/** A funnel record's key: the id of its first event and how many events it holds (their ids follow on, one apart). */
export type FunnelKey = [first: number, count: number]

/** The funnel log's tables (src/store/tables.ts). */
export const eventTables = {
  /**
   * [first event id, count] -> the funnel events one transaction appended (ids first .. first + count - 1), waiting
   * for the analytics process (src/events/funnel.ts).
   */
  funnel: table<FunnelEvent[], FunnelKey>({ name: 'funnel_records', ordered: true, shapes: true, replication: 'local', owners: ['src/events/'] }),
  /** The funnel log as it was kept before records: event id -> one event, until FunnelLog moves them (adoptLegacyEvents). */
  legacyFunnel: table<FunnelEvent, number>({ name: 'funnel_events', ordered: true, shapes: true, replication: 'local', owners: ['src/events/'] })
}
