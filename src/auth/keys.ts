import { createHash, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto'
import type { Scope } from '../generated/types.js'
import type { KeyRecord } from './records.js'
import type { Store } from '../store/store.js'
import { runOnce } from '../store/rewrite.js'

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

/**
 * A key's row in its seat's list. A row per key, not a list in the seat's record: two nodes of a cluster minting keys
 * for one seat at the same moment write two rows, where two copies of a list would keep only the later one.
 */
const seatKeyOf = (record: KeyRecord): [string, string, string] | undefined =>
  record.seat_id === undefined ? undefined : [record.seat_id.toLowerCase(), record.created_at, record.key_id]

/** Stores a key record and its digest and seat indexes; call inside Store.write. */
export function saveKey (store: Store, record: KeyRecord): void {
  store.keys.putSync(record.key_id, record)
  store.keyDigests.putSync(record.digest, record.key_id)
  const listed = seatKeyOf(record)
  if (listed !== undefined) store.seatKeys.putSync(listed, 1)
}

/** Stores a change to a key record (its scopes, its seat, its sealed copy); call inside Store.write. */
export function updateKey (store: Store, record: KeyRecord, change: Partial<Omit<KeyRecord, 'key_id' | 'digest'>>): KeyRecord {
  const next = { ...record, ...change }
  store.keys.putSync(record.key_id, next)
  if (next.seat_id !== record.seat_id) {
    const was = seatKeyOf(record)
    const is = seatKeyOf(next)
    if (was !== undefined) store.seatKeys.removeSync(was)
    if (is !== undefined) store.seatKeys.putSync(is, 1)
  }
  return next
}

/** The ids of a seat's keys, revoked ones included, oldest first. */
export function seatKeyIds (store: Pick<Store, 'seatKeys'>, seatId: string): string[] {
  const seat = seatId.toLowerCase()
  const ids: string[] = []
  for (const key of store.seatKeys.getKeys({ start: [seat], end: [seat + '\u0000'] } as never)) ids.push((key as [string, string, string])[2])
  return ids
}

/**
 * Seats stored before keys had their own rows listed them in the seat's record (key_ids): each gets its rows once
 * (src/store/rewrite.ts runOnce), from what its keys' records say.
 */
export function adoptSeatKeyLists (store: Store): void {
  // Seats are few (one a buyer) and small: one transaction.
  runOnce(store, 'seat-keys', () => store.write(() => {
    for (const { value: seat } of store.seats.getRange()) {
      for (const id of (seat as { key_ids?: string[] }).key_ids ?? []) {
        const record = store.keys.get(id)
        const listed = record !== undefined ? seatKeyOf(record) : undefined
        if (listed !== undefined) store.seatKeys.putSync(listed, 1)
      }
    }
  }))
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
