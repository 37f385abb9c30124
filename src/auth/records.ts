// API keys' storage shape: what the keys table holds (never a key, only its digest), and the tables that hold them.
import type { Scope } from '../generated/types.js'
import { cachedTable, table } from '../store/table.js'

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

/** The auth domain's tables (src/store/tables.ts). */
export const authTables = {
  keys: cachedTable<KeyRecord>({ name: 'keys', replication: 'record', owners: ['src/auth/'] }),
  keyDigests: table<string>({ name: 'key_digests', replication: 'record', owners: ['src/auth/'] }),
  /** [seat_id lower-cased, created_at, key_id] -> 1: a seat's keys, oldest first (src/auth/keys.ts). */
  seatKeys: table<1, [string, string, string]>({ name: 'seat_keys', ordered: true, replication: 'record', owners: ['src/auth/'] })
}
