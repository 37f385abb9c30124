// Creatives' storage shape: what the creatives table holds beyond the wire Creative. A leaf.
import type { Creative } from '../generated/types.js'

/** A creative: the wire view plus who owns it and where its bytes are. */
export interface CreativeRecord extends Omit<Creative, 'upload'> {
  seat_id: string
  /** Object-store key of the asset, once it is stored. */
  object?: string
  /** Upload mode: until when the presigned PUT URL is valid (ms). */
  upload_expires_at?: number
}
