import type { Key } from 'lmdb'
import { pack, unpack } from 'msgpackr'

/**
 * A replicated table's key as a key of the engine's KV bucket: `<table>.<the LMDB key, MessagePack, base64url>`.
 * KV keys allow only letters, digits and `-/_=.`; base64url's alphabet is inside that, and any LMDB key (strings,
 * numbers, the ordered-binary arrays) packs.
 */
export function stateKey (table: string, key: Key): string {
  return `${table}.${pack(key).toString('base64url')}`
}

/** The table and LMDB key a KV key names (stateKey's inverse). */
export function parseStateKey (kvKey: string): { table: string, key: Key } {
  const dot = kvKey.indexOf('.')
  return { table: kvKey.slice(0, dot), key: unpack(Buffer.from(kvKey.slice(dot + 1), 'base64url')) as Key }
}

/** A replicated value on the wire. */
export function packValue (value: unknown): Buffer {
  return pack(value)
}

export function unpackValue (bytes: Uint8Array): unknown {
  return unpack(bytes)
}
