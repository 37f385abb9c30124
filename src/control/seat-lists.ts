import { decodeCursor, encodeCursor } from '../http/cursor.js'
import type { ListQuery } from '../generated/types.js'
import type { Store } from '../store/store.js'

// A seat's own things (creatives, campaigns, assignments, reservations), newest first, in one ordered table.

/** Records the item in the seat's newest-first list. Call inside Store.write. */
export function indexForSeat (store: Store, kind: string, seatId: string, createdMs: number, id: string): void {
  store.bySeat.putSync([kind, seatId.toLowerCase(), -createdMs, id], id)
}

/** One page of a seat's items of a kind, newest first, optionally by status. */
export function seatPage<T extends { status: string }, V> (store: Store, kind: string, seatId: string, q: ListQuery, load: (id: string) => T | undefined, view: (item: T) => V): { items: V[], cursor: { next: string | null, has_more: boolean } } {
  const seat = seatId.toLowerCase()
  const after: [string, string, number, string] | undefined = q.cursor !== undefined ? [kind, seat, ...decodeCursor(q.cursor)] : undefined
  const items: V[] = []
  let last: [string, string, number, string] | undefined
  let more = false
  for (const { key, value } of store.bySeat.getRange({ start: after ?? [kind, seat], end: [kind, seat + '\u0000'], exclusiveStart: after !== undefined } as never)) {
    const item = load(value)
    if (item === undefined || (q.status !== undefined && item.status !== q.status)) continue
    if (items.length === (q.limit ?? 50)) { more = true; break }
    items.push(view(item))
    last = key as unknown as [string, string, number, string]
  }
  return { items, cursor: { next: more && last ? encodeCursor(last[2], last[3]) : null, has_more: more } }
}
