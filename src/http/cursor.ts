import { ApiError } from '../errors.js'

// Opaque page cursors over keys ordered by (milliseconds, id): a seat's newest-first lists, its proofs and its webhook
// deliveries; and the page loop every list shares.

/** The cursor that continues after an item at ms with id. */
export function encodeCursor (ms: number, id: string): string {
  return Buffer.from(JSON.stringify([ms, id])).toString('base64url')
}

/** The (ms, id) a cursor continues after; 400 invalid_parameter when it is not one this service issued. */
export function decodeCursor (cursor: string): [number, string] {
  try {
    const [ms, id] = JSON.parse(Buffer.from(cursor, 'base64url').toString()) as unknown[]
    if (typeof ms === 'number' && typeof id === 'string') return [ms, id]
  } catch {}
  throw new ApiError('invalid_parameter', 'cursor is not valid.', { param: 'cursor' })
}

/** A page of a list and where the next one starts (schema PageCursor). */
export interface Page<T> {
  items: T[]
  cursor: { next: string | null, has_more: boolean }
}

/**
 * One page of a range read: what `pick` makes of each entry (undefined passes it over), at most `limit` of them, and
 * the cursor after the last one kept, made by `cursorOf` from its key. Reads one entry past the page to know whether
 * there is more.
 */
export function pageOf<K, V, T> (entries: Iterable<{ key: K, value: V }>, limit: number, pick: (value: V) => T | undefined, cursorOf: (key: K) => string): Page<T> {
  const items: T[] = []
  let last: K | undefined
  for (const { key, value } of entries) {
    const item = pick(value)
    if (item === undefined) continue
    if (items.length === limit) return { items, cursor: { next: last !== undefined ? cursorOf(last) : null, has_more: true } }
    items.push(item)
    last = key
  }
  return { items, cursor: { next: null, has_more: false } }
}

/** The cursor of a key that ends in (ms, id), as the seat lists, proofs and delivery logs are keyed. */
export const cursorOfKey = (key: unknown): string => {
  const parts = key as unknown[]
  return encodeCursor(parts[parts.length - 2] as number, parts[parts.length - 1] as string)
}
