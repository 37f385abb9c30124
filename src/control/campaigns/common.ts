import { ApiError } from '../../errors.js'
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
