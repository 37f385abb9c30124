// The HTTP pipeline's storage shape: an idempotency key's stored answer, and its table.
import { table } from '../store/table.js'

/** A stored response for an Idempotency-Key. */
export interface IdempotencyRecord {
  fingerprint: string
  status: number
  body: string
  headers: Record<string, string>
  expires_at: number
}

/** The HTTP layer's table (src/store/tables.ts): Idempotency-Keys' stored outcomes, replayed by whichever node a retry reaches. */
export const httpTables = {
  idempotency: table<IdempotencyRecord>({ name: 'idempotency', replication: 'quorum', owners: ['src/http/'] })
}
