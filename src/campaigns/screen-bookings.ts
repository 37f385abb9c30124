import { ApiError } from '../errors.js'
import type { Daypart } from '../generated/types.js'
import { datesBetween, openMinutesOn } from '../inventory/hours.js'
import { openMinutesByHour } from '../inventory/local-time.js'
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

/** Spots booked in an hour of a screen's date by guaranteed lines with dayparts. */
export function bookedInHour (store: Store, screenId: string, date: string, hour: number): number {
  return store.bookedHours.get([screenId, date, hour]) ?? 0
}

/**
 * How a daypart line's spots of a date spread over the hours it plays in: in proportion to the spots each hour can
 * play (its open minutes over the slot length), the remainders to the largest fractions, so that they sum to `spots`.
 * Answers [hour, spots, capacity] for each hour; none on a date the dayparts leave no open hour.
 */
export function hourShares (screen: ScreenRecord, date: string, dayparts: Daypart[], spots: number): Array<[number, number, number]> {
  const capacities = openMinutesByHour(screen.operating_hours, date, dayparts).map(([h, m]): [number, number] => [h, Math.floor((m * 60) / screen.slot_duration_seconds)])
  const total = capacities.reduce((n, [, c]) => n + c, 0)
  if (total === 0) return []
  const exact = capacities.map(([h, c]) => ({ h, c, share: (spots * c) / total }))
  const shares = exact.map((e) => Math.floor(e.share))
  let left = spots - shares.reduce((a, b) => a + b, 0)
  for (const i of exact.map((_, i) => i).sort((a, b) => (exact[b]!.share % 1) - (exact[a]!.share % 1) || a - b)) {
    if (left === 0) break
    shares[i]!++
    left--
  }
  return exact.map((e, i) => [e.h, shares[i]!, e.c])
}

/**
 * Takes spots on screens for every day of a range, or throws 409 capacity_unavailable naming the first short screen
 * and day (and hour); nothing is taken unless all of it fits. With dayparts, a day's spots are also booked hour by
 * hour within them (hourShares), each hour holding no more than it can play, and days without daypart hours take
 * none. Call inside Store.write: handlers run one at a time, so the check and the write cannot interleave with another
 * request (two seats racing for the last spots: exactly one wins).
 */
export function take (store: Store, screens: ScreenRecord[], start: string, end: string, spots: number, param = 'screen_ids', dayparts?: Daypart[]): number {
  const days = datesBetween(start, end)
  // Each screen and day that books, with its hours for a daypart line: worked out once, checked, then written.
  const plan: Array<{ screen: ScreenRecord, date: string, hours: Array<[number, number, number]> }> = []
  screens.forEach((screen, i) => {
    for (const date of days) {
      const hours = dayparts !== undefined ? hourShares(screen, date, dayparts, spots) : []
      if (dayparts !== undefined && hours.length === 0) continue
      const free = freeOn(store, screen, date)
      if (free < spots) throw new ApiError('capacity_unavailable', `Screen ${screen.screen_id} has ${Math.max(0, free)} free spots on ${date}; ${spots} were asked.`, { param: `${param}.${i}` })
      for (const [hour, share, capacity] of hours) {
        const left = capacity - bookedInHour(store, screen.screen_id, date, hour)
        if (left < share) throw new ApiError('capacity_unavailable', `Screen ${screen.screen_id} has ${Math.max(0, left)} free spots from ${hour}:00 to ${hour + 1}:00 on ${date}; ${share} were asked in that hour.`, { param: `${param}.${i}` })
      }
      plan.push({ screen, date, hours })
    }
  })
  for (const { screen, date, hours } of plan) {
    store.booked.putSync([screen.screen_id, date], bookedOn(store, screen.screen_id, date) + spots)
    for (const [hour, share] of hours) if (share > 0) store.bookedHours.putSync([screen.screen_id, date, hour], bookedInHour(store, screen.screen_id, date, hour) + share)
  }
  return plan.length * spots
}

/** Gives spots back (a released or expired hold, a line booked again), hour by hour for a daypart line. */
export function give (store: Store, screenIds: string[], start: string, end: string, spots: number, dayparts?: Daypart[]): void {
  for (const id of screenIds) {
    const screen = dayparts !== undefined ? store.screens.get(id) : undefined
    for (const date of datesBetween(start, end)) {
      const hours = screen !== undefined ? hourShares(screen, date, dayparts!, spots) : undefined
      if (hours?.length === 0) continue
      const left = bookedOn(store, id, date) - spots
      if (left > 0) store.booked.putSync([id, date], left)
      else store.booked.removeSync([id, date])
      for (const [hour, share] of hours ?? []) {
        const rest = bookedInHour(store, id, date, hour) - share
        if (rest > 0) store.bookedHours.putSync([id, date, hour], rest)
        else store.bookedHours.removeSync([id, date, hour])
      }
    }
  }
}
