import { createHash, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto'
import type { Scope } from '../generated/types.js'
import type { KeyRecord } from './records.js'
import type { Store } from '../store/store.js'

const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz'
const PREFIX_LENGTH = 12

/** Prefixes say what minted a key, for people reading logs; they grant nothing (spec, Authentication 1). */
export const KEY_PREFIX = { platform: 'oohb_pk_', legacy: 'oohb_lk_' } as const

/** The scopes onboarding grants a buyer seat. */
export const DSP_SCOPES: Scope[] = ['bid:write', 'inventory:read', 'deals:read', 'stats:read', 'campaigns:write', 'reports:read', 'proof:read', 'mcp:tools']

/** SHA-256 hex digest of a key: the only form in which keys are stored. */
export function digestKey (key: string): string {
  return createHash('sha256').update(key).digest('hex')
}

function randomBase62 (length: number): string {
  // Rejection sampling keeps the characters uniform (256 is not a multiple of 62).
  let out = ''
  while (out.length < length) {
    for (const b of randomBytes(length * 2)) {
      if (b < 248 && out.length < length) out += ALPHABET[b % 62]
    }
  }
  return out
}

/** A new key and its record; the caller stores the record (inside its transaction) and shows the key once. */
export function mintKey (kind: KeyRecord['kind'], scopes: Scope[], now: string, extra: Partial<KeyRecord> = {}): { key: string, record: KeyRecord } {
  const key = KEY_PREFIX[kind] + randomBase62(40)
  return {
    key,
    record: { key_id: randomUUID(), digest: digestKey(key), prefix: key.slice(0, PREFIX_LENGTH), kind, scopes, created_at: now, revoked_at: null, ...extra }
  }
}

/** Stores a key record and its digest index; call inside Store.write. */
export function saveKey (store: Store, record: KeyRecord): void {
  store.keys.putSync(record.key_id, record)
  store.keyDigests.putSync(record.digest, record.key_id)
}

/** Stores a change to a key record (its scopes, its seat, its sealed copy); call inside Store.write. */
export function updateKey (store: Store, record: KeyRecord, change: Partial<Omit<KeyRecord, 'key_id' | 'digest'>>): KeyRecord {
  const next = { ...record, ...change }
  store.keys.putSync(record.key_id, next)
  return next
}

/** Marks a key revoked and stores it; call inside Store.write. */
export function revokeKey (store: Store, record: KeyRecord, now: string): KeyRecord {
  const revoked = { ...record, revoked_at: now }
  store.keys.putSync(record.key_id, revoked)
  return revoked
}

/** The live record for a presented key, or undefined when unknown, revoked or expired. */
export function findKey (store: Store, presented: string, now: number): KeyRecord | undefined {
  const digest = digestKey(presented)
  const keyId = store.keyDigests.get(digest)
  if (keyId === undefined) return undefined
  const record = store.keys.get(keyId)
  // The digest index already matched; the constant-time comparison guards against a corrupted index, not timing.
  if (record === undefined || !timingSafeEqual(Buffer.from(record.digest, 'hex'), Buffer.from(digest, 'hex'))) return undefined
  if (record.revoked_at !== null) return undefined
  if (record.expires_at !== undefined && Date.parse(record.expires_at) <= now) return undefined
  return record
}

/** The API key a request presents: Authorization Bearer (recommended) or x-api-key. */
export function presentedKey (headers: Record<string, string>): string | undefined {
  const auth = headers.authorization
  if (auth !== undefined) {
    const m = /^Bearer\s+(\S+)\s*$/i.exec(auth)
    return m ? m[1] : ''
  }
  const x = headers['x-api-key']
  return x === undefined ? undefined : x.trim()
}
