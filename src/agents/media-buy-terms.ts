// A media buy's terms, checked before anything is booked: its flight, each package's rate, dayparts, signal and
// screens, and what its budget buys (impressions, spots a day) with the room to book them.
import { DAY } from '../analytics/reports.js'
import { iso } from '../clock.js'
import { ApiError } from '../errors.js'
import type { Daypart, PropertyListReference, TargetingOverlay } from '../generated/types.js'
import { checkFlight } from '../campaigns/inputs.js'
import { today } from '../campaigns/lifecycle.js'
import { datesBetween } from '../inventory/hours.js'
import { daysWithin } from '../inventory/local-time.js'
import type { ScreenRecord } from '../inventory/records.js'
import type { Store } from '../store/store.js'
import type { ToolCall } from './call.js'
import { activatedAudience } from './signals.js'
import { referencedList, screenTest } from './property-lists.js'
import { freeEveryDay, impressionsPerPlay, maxGuaranteedBudget, type PriceTerms } from './products.js'
import type { MediaBuyRecord, PackageRecord, Sale } from './records.js'

/** A start_time this far in the past is still taken as now (clocks differ); earlier is refused. */
const START_SKEW_MS = 5 * 60_000
/**
 * A non-guaranteed package plays at most this many times its even share of spots on a screen in a day: enough to
 * make up for screens and hours that booked spots fill, not so many that a few screens take the whole budget.
 */
const SPREAD = 2

const DAY_NAMES = { monday: 'mon', tuesday: 'tue', wednesday: 'wed', thursday: 'thu', friday: 'fri', saturday: 'sat', sunday: 'sun' } as const
type DayName = keyof typeof DAY_NAMES
export const dayNameOf = (day: Daypart['days'][number]): DayName => (Object.keys(DAY_NAMES) as DayName[]).find((name) => DAY_NAMES[name] === day)!

/** The flight an AdCP request names: 'asap' or a time not in the past, ending after it, as instants and as UTC dates. */
export function flightOf (startTime: string, endTime: string, now: number): Pick<MediaBuyRecord, 'start_time' | 'end_time' | 'start_date' | 'end_date'> {
  const start = startTime === 'asap' ? now : Date.parse(startTime)
  const end = Date.parse(endTime)
  if (start < now - START_SKEW_MS) throw new ApiError('invalid_date', `start_time ${startTime} is in the past; give a later time or 'asap'.`, { param: 'start_time' })
  if (end <= start) throw new ApiError('invalid_date', 'end_time must be after start_time.', { param: 'end_time' })
  const flight = { start_time: iso(Math.max(start, now)), end_time: iso(end), start_date: today(Math.max(start, now)), end_date: today(end - 1) }
  checkFlight(flight.start_date, flight.end_date, now)
  return flight
}

export const days = (buy: Pick<MediaBuyRecord, 'start_date' | 'end_date'>) => Math.round((Date.parse(buy.end_date) - Date.parse(buy.start_date)) / DAY) + 1

/**
 * The impressions a budget buys at a CPM, and the spots a day on each screen that play them: in plays of the screens'
 * current audience, spread over screens and days (rounded up, so a guarantee is met).
 */
function spotsFor (store: Store, screens: ScreenRecord[], budget: number, cpm: number, flightDays: number, now: number): { impressions: number, spots: number } {
  const impressions = Math.floor((budget / cpm) * 1000)
  const plays = impressions / impressionsPerPlay(store, screens, now)
  return { impressions, spots: Math.max(1, Math.ceil(plays / (screens.length * flightDays))) }
}

/**
 * What a package's budget buys: the impressions at its rate, and its spots a day on each screen: booked (guaranteed),
 * or the most it plays (non-guaranteed: SPREAD times its even share at the lowest price it can pay, the floor).
 */
export function termsOf (store: Store, screens: ScreenRecord[], p: Pick<PackageRecord, 'sale' | 'budget' | 'rate' | 'floor_price'>, flightDays: number, now: number): { impressions: number, spots: number } {
  const bought = spotsFor(store, screens, p.budget, p.rate, flightDays, now)
  if (p.sale === 'guaranteed') return bought
  return { impressions: bought.impressions, spots: spotsFor(store, screens, p.budget, p.floor_price ?? p.rate, flightDays, now).spots * SPREAD }
}

/** The CPM a package pays: its product's fixed price, or its bid_price (required at auction, at least the floor). */
export function rateOf (sale: Sale, price: PriceTerms, bid: number | undefined, productId: string, param: string): number {
  if (sale !== 'auction') {
    if (bid !== undefined) throw new ApiError('invalid_parameter', `${productId} has a fixed price of $${price.cpm} CPM: leave bid_price out.`, { param })
    return price.cpm
  }
  if (bid === undefined) throw new ApiError('missing_required_field', `${productId} is sold at auction: give bid_price, the most the package pays per 1,000 impressions (at least the floor, $${price.cpm}).`, { param })
  if (bid < price.cpm) throw new ApiError('invalid_parameter', `bid_price $${bid} is below the floor of $${price.cpm} CPM: some of these screens could never sell to it.`, { param })
  return bid
}

/**
 * A package's dayparts from AdCP's targeting_overlay.daypart_targets (none: undefined), checked against the flight:
 * a window must end after it starts and some day of the flight must have one.
 */
export function daypartsOf (overlay: TargetingOverlay | undefined, buy: Pick<MediaBuyRecord, 'start_date' | 'end_date'>, param: string): Daypart[] | undefined {
  const targets = overlay?.daypart_targets ?? []
  if (targets.length === 0) return undefined
  const dayparts = targets.map((t, j): Daypart => {
    if (t.end_hour <= t.start_hour) throw new ApiError('invalid_parameter', `end_hour ${t.end_hour} must be after start_hour ${t.start_hour}.`, { param: `${param}.daypart_targets.${j}.end_hour` })
    return { days: t.days.map((d) => DAY_NAMES[d]) as Daypart['days'], start_hour: t.start_hour, end_hour: t.end_hour }
  })
  if (playDays(buy, dayparts) === 0) throw new ApiError('validation_failed', `No day from ${buy.start_date} to ${buy.end_date} falls on a daypart's days.`, { param: `${param}.daypart_targets` })
  return dayparts
}

/**
 * A package's FEIN signal from AdCP's targeting_overlay.axe_include_segment: its segment and the live audience it
 * means, for a preferred or auction package (guaranteed spots are booked, and a condition checked play by play could
 * leave them unplayed: 422 validation_failed); one the seat has not activated is invalid_parameter.
 */
export function signalOf (call: ToolCall, overlay: TargetingOverlay | undefined, sale: Sale, param: string): Pick<PackageRecord, 'segment' | 'audience'> {
  const segment = overlay?.axe_include_segment
  if (segment === undefined) return {}
  if (sale === 'guaranteed') throw new ApiError('validation_failed', 'Guaranteed spots are booked per screen and day, and a live-audience signal decides play by play: buy the preferred or auction product of this segment to target a signal.', { param: `${param}.axe_include_segment` })
  return { segment, audience: activatedAudience(call, segment, `${param}.axe_include_segment`) }
}

/** A product's screens that a package's property list keeps (all without one); none left is validation_failed. */
export function listedScreens (call: ToolCall, screens: ScreenRecord[], ref: PropertyListReference | undefined, param: string): ScreenRecord[] {
  if (ref === undefined) return screens
  const list = referencedList(call, ref, param)
  const kept = screens.filter(screenTest(call, list))
  if (kept.length === 0) throw new ApiError('validation_failed', `Property list ${list.list_id} (${list.name}) keeps none of this product's ${screens.length} screens.`, { param })
  return kept
}

/** The flight's days a package can play on: every day, or those a daypart names. */
export function playDays (buy: Pick<MediaBuyRecord, 'start_date' | 'end_date'>, dayparts: Daypart[] | undefined): number {
  const dates = datesBetween(buy.start_date, buy.end_date)
  return dayparts === undefined ? dates.length : daysWithin(undefined, dates, dayparts)
}

/**
 * 409 capacity_unavailable, naming the most the screens can take, when they cannot play `spots` a day each over the
 * buy's flight beyond what is booked (`held`: spots a day of this package already booked, which it would give back).
 */
export function checkRoom (call: ToolCall, screens: ScreenRecord[], buy: MediaBuyRecord, spots: number, held: number, rate: number, budget: number, param: string): void {
  if (spots <= freeEveryDay(call.store, screens, buy.start_date, buy.end_date) + held) return
  const most = maxGuaranteedBudget(call.store, screens, buy.start_date, buy.end_date, rate, call.now, held)
  throw new ApiError('capacity_unavailable', `These ${screens.length} screens can take at most $${most} of guaranteed spots from ${buy.start_date} to ${buy.end_date}; $${budget} was asked.`, { param })
}
