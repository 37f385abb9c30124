import { createHash, randomUUID } from 'node:crypto'
import { ApiError } from '../errors.js'
import type { Daypart } from '../generated/types.js'
import { datesBetween } from '../inventory/hours.js'
import type { ScreenRecord } from '../inventory/records.js'
import type { Bookings, Store } from '../store/store.js'
import { bookWhole, hourShares, moveBooked, pastFrom, planBooking, stepWhole, sweepEnded, sweepPastDays } from './capacity.js'
import type { BookingAsk, ClaimOutcome, Shortfall } from './records.js'

/** A node alone is the only decider of its claims. */
const ALONE = { node: '', incarnation: '' }

/**
 * A node alone's claims (their ids name no partition) and its one partition's parts, removed a day after they ended,
 * and its past days' booked rows.
 */
function sweep (store: Store, now: number): void {
  sweepEnded(store, 'claims', now)
  sweepEnded(store, 0, now)
  sweepPastDays(store, 0, now)
}

/**
 * A node alone decides its bookings in the request's own transaction: handlers run one at a time, so the check and
 * the write cannot interleave with another request's (two seats racing for the last spots: exactly one wins). It
 * books each claim whole in one step (taken, declared, committed: bookWhole), with the rules a cluster's logs apply
 * one entry at a time, in one partition: the partitions of the screens are a cluster's.
 */
const LOCAL: Bookings = {
  take (store, items, holdMs, now) {
    sweep(store, now)
    const claim = `clm_${randomUUID().replace(/-/g, '')}`
    const taken = bookWhole(store, claim, 0, 1, items, holdMs, now, ALONE)
    if (!taken.ok) return taken.reason === 'capacity_unavailable' ? { short: taken.short } : { refused: taken }
    return { claim }
  },
  give (store, claim, why, now) {
    sweep(store, now)
    return stepWhole(store, why === 'expire' ? { op: 'expire', claim } : { op: 'give', claim, from: why === 'release' ? 'held' : 'firm' }, 0, now, ALONE)
  },
  keep (store, claim, now) {
    sweep(store, now)
    return stepWhole(store, { op: 'keep', claim }, 0, now, ALONE)
  },
  current: () => undefined,
  within: (_booking, fn) => fn()
}

const bookings = (store: Store): Bookings => store.share.bookings ?? LOCAL

function capacityError (short: Shortfall, param: string): ApiError {
  const message = short.hour === undefined
    ? `Screen ${short.screen} has ${short.free} free spots on ${short.date}; ${short.asked} were asked.`
    : `Screen ${short.screen} has ${short.free} free spots from ${short.hour}:00 to ${short.hour + 1}:00 on ${short.date}; ${short.asked} were asked in that hour.`
  return new ApiError('capacity_unavailable', message, { param: `${param}.${short.at}` })
}

/** A booking the cluster could not decide in time, or that its catalog moved under: the caller may retry. */
function undecided (outcome: ClaimOutcome): ApiError {
  return new ApiError('service_unavailable', `The cluster could not book this screen time right now (${outcome.ok ? 'unknown' : outcome.reason}); retry shortly.`, { retry_after_seconds: 1 }, { 'Retry-After': '1' })
}

/** What take asks for with these arguments: what a route that declares its takes (RouteDef.declares) gives. */
export function askOf (screens: ScreenRecord[], start: string, end: string, spots: number, dayparts?: Daypart[], holdMs?: number): BookingAsk {
  return { items: planBooking(screens, start, end, spots, dayparts), ...(holdMs !== undefined ? { holdMs } : {}) }
}

/**
 * Takes spots on screens for every day of a range under a new claim, or throws 409 capacity_unavailable naming the
 * first short screen and day (and hour); nothing is taken unless all of it fits. With dayparts, a day's spots are
 * also booked hour by hour within them (hourShares), and days without daypart hours take none. A hold (holdMs)
 * gives its spots back by itself once its time has come, unless kept. Call inside Store.write.
 */
export function take (store: Store, screens: ScreenRecord[], start: string, end: string, spots: number, now: number, param = 'screen_ids', dayparts?: Daypart[], holdMs?: number): { claim: string, spots: number } {
  const ask = askOf(screens, start, end, spots, dayparts, holdMs)
  const taken = bookings(store).take(store, ask.items, ask.holdMs, now)
  if ('short' in taken) throw capacityError(taken.short, param)
  if ('refused' in taken) throw undecided(taken.refused)
  return { claim: taken.claim, spots: ask.items.length * spots }
}

/**
 * The id of the record a claim books for (a reservation): the same claim, decided once however many times its request
 * ran (a retry, or a node that woke after another ran it), makes the same record, never a second one beside it.
 */
export function recordIdOf (prefix: string, claim: string): string {
  return `${prefix}_${createHash('sha256').update(claim).digest('hex').slice(0, 32)}`
}

/** What a record booked: its claim, or (a record booked before claims) its screens, days and spots. */
export interface Booked {
  claim?: string | undefined
  screen_ids: string[]
  start_date: string
  end_date: string
  spots: number
  dayparts?: Daypart[] | undefined
}

/**
 * Gives a record's spots back: a held reservation released (why: release) or past its time (expire), a firm booking
 * booked again (rebook). The outcome says whether it was given now: a claim given before, kept, or (expire) not yet
 * known to have lapsed gives nothing. Call inside Store.write.
 */
export function give (store: Store, booked: Booked, why: 'release' | 'expire' | 'rebook', now: number): ClaimOutcome {
  if (booked.claim !== undefined) {
    const given = bookings(store).give(store, booked.claim, why, now)
    // A claim whose days are all past leaves the ledger (sweepEnded): nothing of it is left to give back.
    return !given.ok && given.reason === 'claim_gone' && pastFrom(booked.end_date) <= now ? { ok: true } : given
  }
  for (const id of booked.screen_ids) {
    const screen = store.screens.get(id)
    for (const date of datesBetween(booked.start_date, booked.end_date)) {
      const hours = screen !== undefined && booked.dayparts !== undefined ? hourShares(screen, date, booked.dayparts, booked.spots) : undefined
      if (hours?.length === 0) continue
      moveBooked(store, [{ screen: id, date, spots: booked.spots, capacity: 0, version: 0, at: 0, ...(hours !== undefined ? { hours } : {}) }], -1)
    }
  }
  return { ok: true }
}

/**
 * Keeps a hold's spots for good (a reservation confirmed): 410 expired when its time came first, 409 invalid_transition
 * when its spots were given back. A hold made before claims has none to keep. Call inside Store.write.
 */
export function keep (store: Store, claim: string | undefined, now: number, what: string): void {
  if (claim === undefined) return
  const kept = bookings(store).keep(store, claim, now)
  if (kept.ok) return
  if (kept.reason === 'expired') throw new ApiError('expired', `${what} expired before it was confirmed; create a new one.`)
  if (kept.reason === 'claim_gone') throw new ApiError('invalid_transition', `${what} no longer holds its spots.`)
  throw undecided(kept)
}

/** Gives a record's spots back for a new booking of it (a placement's spots changed), then takes the new ones. */
export function rebook (store: Store, booked: Booked, screens: ScreenRecord[], spots: number, now: number, param?: string, dayparts?: Daypart[]): { claim: string, spots: number } {
  const given = give(store, booked, 'rebook', now)
  if (!given.ok) throw given.reason === 'claim_gone' ? new ApiError('invalid_transition', 'These spots were booked again meanwhile; read the record and retry.') : undecided(given)
  return take(store, screens, booked.start_date, booked.end_date, spots, now, param, dayparts)
}
