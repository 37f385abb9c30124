import { randomFillSync } from 'node:crypto'

/** Random bytes drawn 4 KiB at a time: one call into OpenSSL per id cost a decision 5% of its CPU. */
const pool = Buffer.alloc(4096)
let used = pool.length
const bytes = Buffer.alloc(16)

/**
 * A UUID version 7 (RFC 9562): the millisecond first, then 74 random bits. Records keyed by it are appended near the
 * end of their table instead of landing on a random page of it: a commit then rewrites the pages it already rewrote
 * a moment ago, not a new path through a tree that never stops growing (spots: one per decision).
 */
export function timeOrderedUuid (now: number): string {
  if (used + 10 > pool.length) {
    randomFillSync(pool)
    used = 0
  }
  pool.copy(bytes, 6, used, used + 10)
  used += 10
  bytes.writeUIntBE(now, 0, 6)
  bytes[6] = (bytes[6]! & 0x0f) | 0x70
  bytes[8] = (bytes[8]! & 0x3f) | 0x80
  const hex = bytes.toString('hex')
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`
}
