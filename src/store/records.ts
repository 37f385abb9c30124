// The store's own storage shapes (an outbox event, an object's sum) and tables. Each domain's shapes and tables are in
// its own records.ts.
import { table } from './table.js'

/** A domain event in the transactional outbox. */
export interface OutboxEvent {
  seq: number
  id: string
  type: string
  subject: string
  seat_id?: string
  at: string
  data: Record<string, unknown>
}

/** What the `objects` table records of a stored object (src/store/objects.ts): its size and SHA-256 (hex). */
export interface ObjectSum {
  bytes: number
  sha256: string
}

/** The store's own tables (src/store/tables.ts). */
export const storeTables = {
  outbox: table<OutboxEvent, number>({ name: 'outbox', ordered: true, replication: 'local', owners: ['src/store/'] }),
  /** Operator actions, kept after the outbox is compacted. */
  audit: table<OutboxEvent, number>({ name: 'audit', ordered: true, replication: 'local', owners: ['src/store/'] }),
  /** The one shared table, namespaced by key prefix (secret:, migrated:, ...): any domain writes its own keys. */
  meta: table<unknown>({ name: 'meta', replication: 'local', owners: ['src/'] }),
  /** The operator's switches (src/store/settings.ts). */
  settings: table<unknown>({ name: 'settings', replication: 'record', owners: ['src/store/'] }),
  /** object key -> the size and SHA-256 of a stored object's bytes (src/store/objects.ts). */
  objects: table<ObjectSum>({ name: 'objects', replication: 'quorum', owners: ['src/store/'] })
}
