import { ApiError } from '../errors.js'
import type { Inventory } from '../inventory/inventory.js'
import type { CreativeRecord } from '../creatives/records.js'
import type { ScreenRecord } from '../inventory/records.js'
import type { Store } from '../store/store.js'
import { today } from './lifecycle.js'
import { screenDate } from '../inventory/local-time.js'

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

/** Days in a flight whose end_date the caller left out: 30, start_date included. */
const DEFAULT_FLIGHT_DAYS = 30

/**
 * The flight a request names, its dates defaulted where left out and each default named through warn, then checked
 * (checkFlight). start_date defaults to today: today UTC, or for a placement on screens the earliest of their local
 * dates (players go by their own calendar day, so an Austin screen at 02:00 UTC is still on yesterday's date and
 * would otherwise wait for its midnight; no time zone is more than one day behind UTC, so any screen behind is on
 * the earliest date). A placement given today's UTC date while some screens are still on yesterday is warned of,
 * since the buyer most likely meant "now". end_date defaults to 29 days after start_date.
 */
export function flightOf (body: { start_date?: string, end_date?: string }, now: number, warn: (message: string) => void, screens: ReadonlyArray<Pick<ScreenRecord, 'timezone'>> = []): { start_date: string, end_date: string } {
  const utcToday = today(now)
  const behind = screens.filter((s) => screenDate(s, now) < utcToday)
  const start = body.start_date ?? (behind.length > 0 ? screenDate(behind[0]!, now) : utcToday)
  if (body.start_date === undefined) warn(`start_date not given: defaulted to today, ${start}${screens.length > 0 ? ' (the screens\' local date)' : ''}.`)
  else if (start === utcToday && behind.length > 0) warn(`start_date ${start} has not begun on ${behind.length} of the screens' local calendars (${behind[0]!.timezone} is on ${screenDate(behind[0]!, now)}): they play this placement from their local midnight. Leave start_date out to start at once.`)
  const end = body.end_date ?? today(Date.parse(`${start}T00:00:00Z`) + (DEFAULT_FLIGHT_DAYS - 1) * 86_400_000)
  if (body.end_date === undefined) warn(`end_date not given: defaulted to ${end}, a ${DEFAULT_FLIGHT_DAYS}-day flight.`)
  checkFlight(start, end, now)
  return { start_date: start, end_date: end }
}

/** A flight must start no later than it ends and must not have ended already. */
export function checkFlight (start: string, end: string, now: number, maxDays = 366): void {
  if (start > end) throw new ApiError('invalid_date', 'start_date must not be after end_date.', { param: 'end_date' })
  if (end < today(now)) throw new ApiError('invalid_date', 'end_date is in the past.', { param: 'end_date' })
  const days = (Date.parse(end) - Date.parse(start)) / 86_400_000 + 1
  if (days > maxDays) throw new ApiError('invalid_date', `A flight is at most ${maxDays} days.`, { param: 'end_date' })
}
