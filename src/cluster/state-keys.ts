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

/**
 * Marks a state bucket value that carries a stamp (row-versions.ts). A string no row's value begins with, so a plain
 * value is never read as one.
 */
const STAMPED = '\u0000oohbid.stamped'

/** Where a value stands among a row's values (row-versions.ts): its stamp, and a repair's revision. */
export interface BucketStamp {
  stamp: number
  rev?: number
}

/** A row's value (undefined: removed) with its stamp. */
export class Stamped {
  constructor (readonly at: BucketStamp, readonly value: unknown) {}
}

/** A stamped value as the state bucket carries it: a removal stamped is a put too. */
export function packStamped ({ at, value }: Stamped): Buffer {
  return pack([STAMPED, at.stamp, at.rev ?? null, value === undefined, value ?? null])
}

/** A state bucket value: its row's value, and its stamp when it carries one. */
export function unpackEntry (bytes: Uint8Array): { value: unknown, at?: BucketStamp } {
  const read = unpack(bytes) as unknown
  if (!Array.isArray(read) || read[0] !== STAMPED) return { value: read }
  const [, stamp, rev, removed, value] = read as [string, number, number | null, boolean, unknown]
  return { value: removed ? undefined : value, at: rev === null ? { stamp } : { stamp, rev } }
}
