import { ApiError } from '../errors.js'
import { datesBetween, openMinutesOn } from '../inventory/hours.js'
import type { ScreenRecord } from '../inventory/records.js'
import type { Store } from '../store/store.js'

/** Spots a screen can play on a date: open time in its local hours divided by its slot duration. */
export function capacityOn (screen: ScreenRecord, date: string): number {
  return Math.floor((openMinutesOn(screen.operating_hours, date) * 60) / screen.slot_duration_seconds)
}

export function bookedOn (store: Store, screenId: string, date: string): number {
  return store.booked.get([screenId, date]) ?? 0
}

/** Spots still free on a screen's date: its capacity less what placements, holds and deals booked. */
export function freeOn (store: Store, screen: ScreenRecord, date: string): number {
  return capacityOn(screen, date) - bookedOn(store, screen.screen_id, date)
}

/**
 * Takes spots on screens for every day of a range, or throws 409 capacity_unavailable naming the first short screen
 * and day; nothing is taken unless all of it fits. Call inside Store.write: handlers run one at a time, so the check
 * and the write cannot interleave with another request (two seats racing for the last spots: exactly one wins).
 */
export function take (store: Store, screens: ScreenRecord[], start: string, end: string, spots: number, param = 'screen_ids'): number {
  const days = datesBetween(start, end)
  screens.forEach((screen, i) => {
    for (const date of days) {
      const free = freeOn(store, screen, date)
      if (free < spots) throw new ApiError('capacity_unavailable', `Screen ${screen.screen_id} has ${Math.max(0, free)} free spots on ${date}; ${spots} were asked.`, { param: `${param}.${i}` })
    }
  })
  for (const screen of screens) for (const date of days) store.booked.putSync([screen.screen_id, date], bookedOn(store, screen.screen_id, date) + spots)
  return screens.length * days.length * spots
}

/** Gives spots back (a released or expired hold). */
export function give (store: Store, screenIds: string[], start: string, end: string, spots: number): void {
  for (const id of screenIds) {
    for (const date of datesBetween(start, end)) {
      const left = bookedOn(store, id, date) - spots
      if (left > 0) store.booked.putSync([id, date], left)
      else store.booked.removeSync([id, date])
    }
  }
}
