// Creatives' storage shape: what the creatives table holds beyond the wire Creative, and its table.
import type { Creative } from '../generated/types.js'
import { cachedTable } from '../store/table.js'

/** A creative: the wire view plus who owns it and where its bytes are. */
export interface CreativeRecord extends Omit<Creative, 'upload'> {
  seat_id: string
  /** Object-store key of the asset, once it is stored. */
  object?: string
  /** Upload mode: until when the presigned PUT URL is valid (ms). */
  upload_expires_at?: number
}

/** The creatives domain's tables (src/store/tables.ts); moderation writes its outcome into the creative. */
export const creativeTables = {
  creatives: cachedTable<CreativeRecord>({ name: 'creatives', replication: 'record', owners: ['src/creatives/', 'src/moderation/'] })
}
