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

/** The replicated tables whose rows are listed per seat, and the kind each is listed as. */
const LISTED: Record<string, string> = { creatives: 'creative', webhooks: 'webhook', campaigns: 'campaign', assignments: 'assignment', reservations: 'reservation', media_buys: 'media_buy', property_lists: 'property_list' }

/**
 * A cluster node: keeps its seat lists (each node's own by_seat index) in step with a row another node made or
 * removed. Called by the applier after it writes a row, with the value the row held before; call inside Store.write.
 */
export function seatListApplied (store: Store, table: string, key: string, previous: unknown): void {
  const kind = LISTED[table]
  if (kind === undefined) return
  const row = store.replicated(table)!.get(key) as { seat_id: string, created_at: string } | undefined
  if (row !== undefined) indexForSeat(store, kind, row.seat_id, Date.parse(row.created_at), key)
  else if (previous !== undefined) {
    const gone = previous as { seat_id: string, created_at: string }
    unindexForSeat(store, kind, gone.seat_id, Date.parse(gone.created_at), key)
  }
}

/** Every item of a kind the seat has, newest first (an id whose record is gone is passed over). */
export function seatItems<T> (store: Store, kind: string, seatId: string, load: (id: string) => T | undefined): T[] {
  const seat = seatId.toLowerCase()
  const items: T[] = []
  for (const { value } of store.bySeat.getRange({ start: [kind, seat], end: [kind, seat + '\u0000'] } as never)) {
    const item = load(value)
    if (item !== undefined) items.push(item)
  }
  return items
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
