// API keys' storage shape: what the keys table holds (never a key, only its digest). A leaf.
import type { Scope } from '../generated/types.js'

/** An API key. Only the SHA-256 digest of the key is stored; the key itself is shown once. */
export interface KeyRecord {
  key_id: string
  digest: string
  prefix: string
  kind: 'platform' | 'legacy'
  scopes: Scope[]
  seat_id?: string
  partner_id?: string
  label?: string
  created_at: string
  expires_at?: string
  revoked_at: string | null
  /** Seat keys: the key sealed with the key-encryption key (src/auth/sealed-keys.ts), so that it can sign legacy notifications. */
  sealed?: string
}
