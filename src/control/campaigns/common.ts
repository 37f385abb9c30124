import { ApiError } from '../../errors.js'
import type { ListQuery } from '../../generated/types.js'
import type { Inventory } from '../../inventory/inventory.js'
import type { CreativeRecord, ScreenRecord } from '../../store/records.js'
import type { Store } from '../../store/store.js'
import { today } from '../../campaigns/lifecycle.js'

/** An approved creative of the seat: 404 creative_not_found if missing or foreign, 422 validation_failed if not approved. */
export function approvedCreative (store: Store, seatId: string, id: string, param = 'creative_id'): CreativeRecord {
  const c = store.creatives.get(id)
  if (c === undefined || c.seat_id.toLowerCase() !== seatId.toLowerCase()) throw new ApiError('creative_not_found', `No creative ${id} belongs to this seat.`, { param })
  if (c.status !== 'approved') throw new ApiError('validation_failed', `Creative ${id} is ${c.status}; only an approved creative can be used.`, { param })
  return c
}

/** Screens buyers may use, by id: 400 invalid_screen naming the first unknown one. */
export function usableScreens (inventory: Inventory, ids: string[], param = 'screen_ids'): ScreenRecord[] {
  const enabled = inventory.sourcesEnabled()
  return ids.map((id, i) => {
    const s = inventory.store.screens.get(id)
    if (s === undefined || !s.auction_enabled || !enabled.includes(s.source)) throw new ApiError('invalid_screen', `screen_id ${id} is unknown.`, { param: `${param}.${i}` })
    return s
  })
}

/** A flight must start no later than it ends and must not have ended already. */
export function checkFlight (start: string, end: string, now: number, maxDays = 366): void {
  if (start > end) throw new ApiError('invalid_date', 'start_date must not be after end_date.', { param: 'end_date' })
  if (end < today(now)) throw new ApiError('invalid_date', 'end_date is in the past.', { param: 'end_date' })
  const days = (Date.parse(end) - Date.parse(start)) / 86_400_000 + 1
  if (days > maxDays) throw new ApiError('invalid_date', `A flight is at most ${maxDays} days.`, { param: 'end_date' })
}

/** Records the item in the seat's newest-first list. Call inside Store.write. */
export function indexForSeat (store: Store, kind: string, seatId: string, createdMs: number, id: string): void {
  store.bySeat.putSync([kind, seatId.toLowerCase(), -createdMs, id], id)
}

/** One page of a seat's items of a kind, newest first, optionally by status. */
export function seatPage<T extends { status: string }, V> (store: Store, kind: string, seatId: string, q: ListQuery, load: (id: string) => T | undefined, view: (item: T) => V): { items: V[], cursor: { next: string | null, has_more: boolean } } {
  const seat = seatId.toLowerCase()
  let after: [string, string, number, string] | undefined
  if (q.cursor !== undefined) {
    try {
      const [ms, id] = JSON.parse(Buffer.from(q.cursor, 'base64url').toString()) as [number, string]
      if (typeof ms !== 'number' || typeof id !== 'string') throw new Error('shape')
      after = [kind, seat, ms, id]
    } catch {
      throw new ApiError('invalid_parameter', 'cursor is not valid.', { param: 'cursor' })
    }
  }
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
  return { items, cursor: { next: more && last ? Buffer.from(JSON.stringify([last[2], last[3]])).toString('base64url') : null, has_more: more } }
}
