import { cursorOfKey, decodeCursor, pageOf, type Page } from '../http/cursor.js'
import type { ListQuery } from '../generated/types.js'
import type { Store } from '../store/store.js'

// A seat's own things (creatives, campaigns, assignments, reservations), newest first, in one ordered table.

/** Records the item in the seat's newest-first list. Call inside Store.write. */
export function indexForSeat (store: Store, kind: string, seatId: string, createdMs: number, id: string): void {
  store.bySeat.putSync([kind, seatId.toLowerCase(), -createdMs, id], id)
}

/** Takes the item out of the seat's list (it was deleted). Call inside Store.write. */
export function unindexForSeat (store: Store, kind: string, seatId: string, createdMs: number, id: string): void {
  store.bySeat.removeSync([kind, seatId.toLowerCase(), -createdMs, id])
}

/** One page of a seat's items of a kind, newest first, optionally by status. */
export function seatPage<T extends { status: string }, V> (store: Store, kind: string, seatId: string, q: ListQuery, load: (id: string) => T | undefined, view: (item: T) => V): Page<V> {
  const seat = seatId.toLowerCase()
  const after: [string, string, number, string] | undefined = q.cursor !== undefined ? [kind, seat, ...decodeCursor(q.cursor)] : undefined
  const entries = store.bySeat.getRange({ start: after ?? [kind, seat], end: [kind, seat + '\u0000'], exclusiveStart: after !== undefined } as never)
  const page = pageOf(entries, q.limit ?? 50, (id) => {
    const item = load(id)
    return item === undefined || (q.status !== undefined && item.status !== q.status) ? undefined : item
  }, cursorOfKey)
  return { items: page.items.map(view), cursor: page.cursor }
}
