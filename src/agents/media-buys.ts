import { randomUUID } from 'node:crypto'
import { DAY } from '../analytics/reports.js'
import { iso } from '../clock.js'
import { ApiError } from '../errors.js'
import type { CreateMediaBuyRequest, CreativeWeight, Daypart, PropertyListReference, MediaBuyPackageRequest, TargetingOverlay, UpdateMediaBuyRequest } from '../generated/types.js'
import { indexForSeat } from '../accounts/seat-lists.js'
import { createCampaign, moveCampaign, retermCampaign } from '../campaigns/campaigns.js'
import { checkFlight } from '../campaigns/inputs.js'
import { deliveredOf } from '../campaigns/delivery.js'
import { fromMicros } from '../money.js'
import { today } from '../campaigns/lifecycle.js'
import { place, respot, setPlacementPaused, setPlacementTerms, setRotation } from '../campaigns/placements.js'
import { give, take } from '../campaigns/screen-bookings.js'
import { seatCreativeByCrid } from '../creatives/register.js'
import type { CreativeRecord } from '../creatives/records.js'
import { datesBetween } from '../inventory/hours.js'
import { daysWithin } from '../inventory/local-time.js'
import type { ScreenRecord } from '../inventory/records.js'
import type { Store } from '../store/store.js'
import { agentUrl, checkAccount, record, type BuyDeps, type ToolCall } from './call.js'
import { inlineCreativeId, upsertCreative } from './creative-upsert.js'
import { activatedAudience } from './signals.js'
import { reportingOf, scheduleReports } from './delivery-reports.js'
import { referencedList, screenTest } from './property-lists.js'
import { saveBuy, seatMediaBuy, seatMediaBuys, statusOf, waits } from './seat-buys.js'
import { deliveryTypeOf, freeEveryDay, impressionsPerPlay, maxGuaranteedBudget, PRICING_OPTION, priceOf, productKeyOf, productScreens, type PriceTerms } from './products.js'
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
const dayNameOf = (day: Daypart['days'][number]): DayName => (Object.keys(DAY_NAMES) as DayName[]).find((name) => DAY_NAMES[name] === day)!

function packageView (p: PackageRecord, agentUrl: string): Record<string, unknown> {
  return {
    package_id: p.package_id,
    ...(p.buyer_ref !== undefined ? { buyer_ref: p.buyer_ref } : {}),
    product_id: p.product_id,
    pricing_option_id: p.pricing_option_id,
    budget: p.budget,
    ...(p.sale === 'auction' ? { bid_price: p.rate } : {}),
    pacing: p.pacing,
    impressions: p.impressions,
    paused: p.paused,
    ...(p.dayparts !== undefined || p.segment !== undefined || p.property_list !== undefined ? { targeting_overlay: { ...(p.dayparts !== undefined ? { daypart_targets: p.dayparts.map((d) => ({ days: d.days.map(dayNameOf), start_hour: d.start_hour, end_hour: d.end_hour })) } : {}), ...(p.segment !== undefined ? { axe_include_segment: p.segment } : {}), ...(p.property_list !== undefined ? { property_list: { agent_url: agentUrl, list_id: p.property_list } } : {}) } } : {}),
    creative_assignments: p.creative_ids.map((creative_id) => ({ creative_id, weight: p.weights?.[creative_id] ?? 1 })),
    ext: {
      oohbid: {
        delivery_type: deliveryTypeOf(p.sale),
        sale: p.sale,
        ...(p.sale === 'auction' ? { bid_price: p.rate, floor_price: p.floor_price } : { fixed_price: p.rate }),
        spots_per_day: p.spots_per_day,
        screens: p.screen_ids.length,
        campaign_id: p.campaign_id ?? null,
        assignment_id: p.assignment_id ?? null
      }
    }
  }
}

function buyView (buy: MediaBuyRecord, now: number, agentUrl: string): Record<string, unknown> {
  return { media_buy_id: buy.media_buy_id, buyer_ref: buy.buyer_ref, status: statusOf(buy, now), packages: buy.packages.map((p) => packageView(p, agentUrl)) }
}

/** The flight an AdCP request names: 'asap' or a time not in the past, ending after it, as instants and as UTC dates. */
function flightOf (startTime: string, endTime: string, now: number): Pick<MediaBuyRecord, 'start_time' | 'end_time' | 'start_date' | 'end_date'> {
  const start = startTime === 'asap' ? now : Date.parse(startTime)
  const end = Date.parse(endTime)
  if (start < now - START_SKEW_MS) throw new ApiError('invalid_date', `start_time ${startTime} is in the past; give a later time or 'asap'.`, { param: 'start_time' })
  if (end <= start) throw new ApiError('invalid_date', 'end_time must be after start_time.', { param: 'end_time' })
  const flight = { start_time: iso(Math.max(start, now)), end_time: iso(end), start_date: today(Math.max(start, now)), end_date: today(end - 1) }
  checkFlight(flight.start_date, flight.end_date, now)
  return flight
}

const days = (buy: Pick<MediaBuyRecord, 'start_date' | 'end_date'>) => Math.round((Date.parse(buy.end_date) - Date.parse(buy.start_date)) / DAY) + 1

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
function termsOf (store: Store, screens: ScreenRecord[], p: Pick<PackageRecord, 'sale' | 'budget' | 'rate' | 'floor_price'>, flightDays: number, now: number): { impressions: number, spots: number } {
  const bought = spotsFor(store, screens, p.budget, p.rate, flightDays, now)
  if (p.sale === 'guaranteed') return bought
  return { impressions: bought.impressions, spots: spotsFor(store, screens, p.budget, p.floor_price ?? p.rate, flightDays, now).spots * SPREAD }
}

/** The CPM a package pays: its product's fixed price, or its bid_price (required at auction, at least the floor). */
function rateOf (sale: Sale, price: PriceTerms, bid: number | undefined, productId: string, param: string): number {
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
function daypartsOf (overlay: TargetingOverlay | undefined, buy: Pick<MediaBuyRecord, 'start_date' | 'end_date'>, param: string): Daypart[] | undefined {
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
function signalOf (call: ToolCall, overlay: TargetingOverlay | undefined, sale: Sale, param: string): Pick<PackageRecord, 'segment' | 'audience'> {
  const segment = overlay?.axe_include_segment
  if (segment === undefined) return {}
  if (sale === 'guaranteed') throw new ApiError('validation_failed', 'Guaranteed spots are booked per screen and day, and a live-audience signal decides play by play: buy the preferred or auction product of this segment to target a signal.', { param: `${param}.axe_include_segment` })
  return { segment, audience: activatedAudience(call, segment, `${param}.axe_include_segment`) }
}

/** A product's screens that a package's property list keeps (all without one); none left is validation_failed. */
function listedScreens (call: ToolCall, screens: ScreenRecord[], ref: PropertyListReference | undefined, param: string): ScreenRecord[] {
  if (ref === undefined) return screens
  const list = referencedList(call, ref, param)
  const kept = screens.filter(screenTest(call, list))
  if (kept.length === 0) throw new ApiError('validation_failed', `Property list ${list.list_id} (${list.name}) keeps none of this product's ${screens.length} screens.`, { param })
  return kept
}

/** The flight's days a package can play on: every day, or those a daypart names. */
function playDays (buy: Pick<MediaBuyRecord, 'start_date' | 'end_date'>, dayparts: Daypart[] | undefined): number {
  const dates = datesBetween(buy.start_date, buy.end_date)
  return dayparts === undefined ? dates.length : daysWithin(undefined, dates, dayparts)
}

/**
 * 409 capacity_unavailable, naming the most the screens can take, when they cannot play `spots` a day each over the
 * buy's flight beyond what is booked (`held`: spots a day of this package already booked, which it would give back).
 */
function checkRoom (call: ToolCall, screens: ScreenRecord[], buy: MediaBuyRecord, spots: number, held: number, rate: number, budget: number, param: string): void {
  if (spots <= freeEveryDay(call.store, screens, buy.start_date, buy.end_date) + held) return
  const most = maxGuaranteedBudget(call.store, screens, buy.start_date, buy.end_date, rate, call.now, held)
  throw new ApiError('capacity_unavailable', `These ${screens.length} screens can take at most $${most} of guaranteed spots from ${buy.start_date} to ${buy.end_date}; $${budget} was asked.`, { param })
}

/**
 * Opens package i of a new media buy: checks the product, its pricing option, the price and the money, and books
 * its spots when it is guaranteed (its creatives are the caller's).
 */
function openPackage (call: ToolCall, buy: MediaBuyRecord, p: MediaBuyPackageRequest, i: number): Omit<PackageRecord, 'creative_ids' | 'assigned_at' | 'weights'> {
  const at = `packages.${i}`
  const { key, sale } = productKeyOf(p.product_id, `${at}.product_id`)
  if (p.pricing_option_id !== PRICING_OPTION[sale]) throw new ApiError('invalid_parameter', `Product ${p.product_id} is priced by pricing option ${PRICING_OPTION[sale]}, not ${p.pricing_option_id}.`, { param: `${at}.pricing_option_id` })
  const screens = listedScreens(call, productScreens(call.store, call.inventory, key, `${at}.product_id`), p.targeting_overlay?.property_list, `${at}.targeting_overlay.property_list`)
  const price = priceOf(call.store, screens, sale, days(buy), call.now)
  const rate = rateOf(sale, price, p.bid_price, p.product_id, `${at}.bid_price`)
  const dayparts = daypartsOf(p.targeting_overlay, buy, `${at}.targeting_overlay`)
  const signal = signalOf(call, p.targeting_overlay, sale, `${at}.targeting_overlay`)
  if (p.budget < price.min_spend) throw new ApiError('invalid_budget', `A package on these ${screens.length} screens over ${days(buy)} days is at least $${price.min_spend} (one spot a day on every screen at $${price.cpm} CPM).`, { param: `${at}.budget` })
  const terms = { sale, budget: p.budget, rate, ...(sale === 'auction' ? { floor_price: price.cpm } : {}) }
  const bought = termsOf(call.store, screens, terms, playDays(buy, dayparts), call.now)
  if (sale === 'guaranteed') {
    // A daypart line is checked hour by hour as take books it, which names the short screen, day and hour.
    if (dayparts === undefined) checkRoom(call, screens, buy, bought.spots, 0, rate, p.budget, `${at}.budget`)
    take(call.store, screens, buy.start_date, buy.end_date, bought.spots, `${at}.budget`, dayparts)
  }
  return {
    package_id: `pkg-${i}`,
    ...(p.buyer_ref !== undefined ? { buyer_ref: p.buyer_ref } : {}),
    product_id: p.product_id,
    pricing_option_id: p.pricing_option_id,
    ...terms,
    pacing: p.pacing ?? 'even',
    ...(dayparts !== undefined ? { dayparts } : {}),
    ...signal,
    ...(p.targeting_overlay?.property_list !== undefined ? { property_list: p.targeting_overlay.property_list.list_id } : {}),
    screen_ids: screens.map((s) => s.screen_id),
    spots_per_day: bought.spots,
    impressions: bought.impressions,
    paused: false
  }
}

/** A creative a request names for a package, by the buyer's creative_id, with the weight it gave (if any). */
interface Named { id: string, weight?: number | undefined }

/**
 * A package's creatives, their weights and when each was first attached: one named again keeps its date, and its
 * weight unless it is given another.
 */
function named (p: Pick<PackageRecord, 'assigned_at' | 'weights'> | undefined, entries: readonly Named[], at: string): Pick<PackageRecord, 'creative_ids' | 'assigned_at' | 'weights'> {
  const creativeIds = [...new Set(entries.map((e) => e.id))]
  const weights: Record<string, number> = {}
  for (const id of creativeIds) {
    const weight = entries.findLast((e) => e.id === id && e.weight !== undefined)?.weight ?? p?.weights?.[id] ?? 1
    if (weight !== 1) weights[id] = weight
  }
  return { creative_ids: creativeIds, assigned_at: Object.fromEntries(creativeIds.map((id) => [id, p?.assigned_at?.[id] ?? at])), weights }
}

/**
 * The creatives a package request names (creative_ids, creative_assignments, and inline creatives, synced as
 * sync_creatives would: all or nothing with the request), adding what it registered to `created` for moderation.
 */
function requestedCreatives (call: ToolCall, p: Pick<MediaBuyPackageRequest, 'creative_ids' | 'creative_assignments' | 'creatives'>, at: string, created: string[]): Named[] {
  const inline = (p.creatives ?? []).map((c, j): Named => {
    const crid = c.creative_id ?? inlineCreativeId(c)
    const done = upsertCreative(call, c, crid)
    if (done.action === 'failed') throw new ApiError('invalid_parameter', done.errors.join(' '), { param: `${at}.creatives.${j}` })
    if (done.action !== 'unchanged') created.push(done.creative!.creative_id)
    return { id: crid, weight: c.weight }
  })
  return [...(p.creative_ids ?? []).map((id) => ({ id })), ...(p.creative_assignments ?? []).map((a) => ({ id: a.creative_id, weight: a.weight })), ...inline]
}

/** What a package's placement rotates among: each attached creative the seat has, at its weight (0: not played). */
function packageRotation (store: Store, buy: MediaBuyRecord, p: PackageRecord): CreativeWeight[] {
  return p.creative_ids.flatMap((id) => {
    const creative = seatCreativeByCrid(store, buy.seat_id, id)
    const weight = p.weights?.[id] ?? 1
    return creative !== undefined && weight > 0 ? [{ creative_id: creative.creative_id, weight }] : []
  })
}

/** A package's creatives changed: an active one's placement rotates among the new set from its next spot. */
function rotate (store: Store, buy: MediaBuyRecord, p: PackageRecord): void {
  const a = p.assignment_id !== undefined ? store.assignments.get(p.assignment_id) : undefined
  if (a !== undefined) setRotation(store, a, packageRotation(store, buy, p))
}

/** The approved creative a package not yet activated would play, if it can be activated now. */
function readyCreative (store: Store, buy: MediaBuyRecord, p: PackageRecord, now: number): CreativeRecord | undefined {
  if (p.campaign_id !== undefined || p.paused || buy.paused || now >= Date.parse(buy.end_time)) return undefined
  return p.creative_ids.map((id) => seatCreativeByCrid(store, buy.seat_id, id)).find((c) => c?.status === 'approved')
}

/**
 * Turns each package that has an approved creative (the first approved of its creative_ids) into a campaign of the
 * seat and a placement of its booked spots, rotating among its creatives, that players pick up within
 * PICKUP_SECONDS. Call inside Store.write; answers whether anything changed.
 */
function activate (deps: BuyDeps, buy: MediaBuyRecord, now: number): boolean {
  let changed = false
  buy.packages = buy.packages.map((p) => {
    const creative = readyCreative(deps.store, buy, p, now)
    if (creative === undefined) return p
    // The campaign carries the package's money (and a guaranteed one's goal); the placement plays it on the screens.
    const { campaign } = createCampaign(deps, buy.seat_id, {
      name: `${buy.buyer_ref} / ${p.package_id}`,
      creative_id: creative.creative_id,
      targeting: { screen_ids: p.screen_ids },
      budget_usd: p.budget,
      pacing: p.pacing,
      start_date: buy.start_date,
      end_date: buy.end_date,
      ...(p.sale === 'guaranteed' ? { goal_impressions: Math.max(1, p.impressions) } : {}),
      media_buy_id: buy.media_buy_id
    }, now)
    changed = true
    const screens = p.screen_ids.map((id) => deps.store.screens.get(id)).filter((s): s is ScreenRecord => s !== undefined)
    const line = { line: p.sale, cpm: p.rate, ...(p.sale !== 'guaranteed' ? { pacing: p.pacing } : {}), ...(p.dayparts !== undefined ? { dayparts: p.dayparts } : {}), ...(p.audience !== undefined ? { audience: p.audience } : {}), rotation: packageRotation(deps.store, buy, p) }
    const flight = { start: Date.parse(buy.start_time), end: Date.parse(buy.end_time) }
    const placed = place(deps, buy.seat_id, { creative_id: creative.creative_id, screen_ids: screens.map((s) => s.screen_id), start_date: buy.start_date, end_date: buy.end_date, spots_per_day: p.spots_per_day, campaign_id: campaign.campaign_id, flight, ...line }, screens, now, 'media_buy', false)
    return { ...p, campaign_id: campaign.campaign_id, assignment_id: placed.assignment_id }
  })
  return changed
}

/** Media buys with a package waiting for its creative's approval, from the index, and the indexed ones that ended. */
function waitingBuys (store: Store, now: number): { waiting: MediaBuyRecord[], ended: string[] } {
  const waiting: MediaBuyRecord[] = []
  const ended: string[] = []
  for (const { key, value: end } of store.mediaBuysWaiting.getRange()) {
    if (end <= now) ended.push(key)
    else {
      const buy = store.mediaBuys.get(key)
      if (buy !== undefined) waiting.push(buy)
    }
  }
  return { waiting, ended }
}

/** Whether a waiting buy has a package whose creative is approved now. */
const ready = (store: Store, buy: MediaBuyRecord, now: number) => buy.packages.some((p) => readyCreative(store, buy, p, now) !== undefined)

/**
 * Indexes the waiting buys of a store kept before media_buys_waiting existed: run once at start, it finds nothing to
 * do once the index has been written.
 */
export function indexWaitingBuys (store: Store): number {
  if (store.mediaBuysWaiting.getKeysCount() > 0) return 0
  const waiting = [...store.mediaBuys.getRange()].filter(({ value }) => waits(value))
  if (waiting.length > 0) store.write(() => { for (const { key, value } of waiting) store.mediaBuysWaiting.putSync(key, Date.parse(value.end_time)) })
  return waiting.length
}

/** Whether activateMediaBuys has a package to activate now: a cluster node takes the catalog lock only then. */
export function mediaBuysDue (store: Store, now: number): boolean {
  return waitingBuys(store, now).waiting.some((buy) => ready(store, buy, now))
}

/**
 * Activates the packages of every media buy whose creative moderation has approved since (the supervisor runs it every
 * second; on a cluster node under the catalog lock, so that a package becomes one campaign). It reads only the buys
 * media_buys_waiting indexes, and writes only those with a package to activate; ended buys leave the index.
 */
export function activateMediaBuys (deps: BuyDeps, now: number): number {
  const { waiting, ended } = waitingBuys(deps.store, now)
  if (ended.length > 0) deps.store.write(() => { for (const key of ended) deps.store.mediaBuysWaiting.removeSync(key) })
  let activated = 0
  for (const { media_buy_id: key } of waiting.filter((buy) => ready(deps.store, buy, now))) {
    deps.store.write(() => {
      const buy = deps.store.mediaBuys.get(key)
      if (buy === undefined || !activate(deps, buy, now)) return
      buy.updated_at = iso(now)
      saveBuy(deps.store, buy)
      activated++
    })
  }
  return activated
}

/** create_media_buy: every package opened (guaranteed spots booked) and activated where it can be, or nothing written. */
export function createMediaBuy (call: ToolCall, args: Record<string, unknown>): Record<string, unknown> {
  const req = args as unknown as CreateMediaBuyRequest
  checkAccount(call, req.account)
  const flight = flightOf(req.start_time, req.end_time, call.now)
  const created: string[] = []
  const answer = record(call, () => {
    const stamp = iso(call.now)
    const buy: MediaBuyRecord = { media_buy_id: `mb_${randomUUID().replace(/-/g, '')}`, seat_id: call.seat.seat_id, buyer_ref: req.buyer_ref, ...flight, paused: false, packages: [], created_at: stamp, updated_at: stamp }
    if (req.brand?.domain !== undefined) buy.brand_domain = req.brand.domain
    if (req.reporting_webhook !== undefined) scheduleReports(call.store, buy, reportingOf(call, req.reporting_webhook, buy, call.now))
    buy.packages = req.packages.map((p, i) => {
      const pkg = openPackage(call, buy, p, i)
      return { ...pkg, ...named(undefined, requestedCreatives(call, p, `packages.${i}`, created), stamp) }
    })
    activate(call, buy, call.now)
    saveBuy(call.store, buy)
    indexForSeat(call.store, 'media_buy', call.seat.seat_id, call.now, buy.media_buy_id)
    const pending = buy.packages.filter((p) => p.campaign_id === undefined).length
    return {
      ...buyView(buy, call.now, agentUrl(call)),
      creative_deadline: buy.start_time,
      sandbox: call.seat.status === 'sandbox',
      ...(pending > 0 ? { message: `${pending} package(s) wait for an approved creative: sync_creatives with assignments attaches one; each plays from its approval.` } : {})
    }
  })
  if (!call.dryRun) for (const id of created) call.moderator.schedule(id)
  return answer
}

/**
 * Attaches the seat's creative (by the buyer's creative_id) to a package, named media_buy_id/package_id or by a
 * package_id unique among the seat's running buys, and activates it when the creative is approved; answers why not,
 * or undefined when attached. Call inside Store.write.
 */
export function attachCreative (call: ToolCall, creativeId: string, ref: string, weight?: number): string | undefined {
  const slash = ref.lastIndexOf('/')
  const packageId = ref.slice(slash + 1)
  const candidates = slash >= 0
    ? [call.store.mediaBuys.get(ref.slice(0, slash))].filter((b): b is MediaBuyRecord => b !== undefined && b.seat_id.toLowerCase() === call.seat.seat_id.toLowerCase())
    : seatMediaBuys(call.store, call.seat.seat_id).filter((b) => statusOf(b, call.now) !== 'completed')
  const owners = candidates.filter((b) => b.packages.some((p) => p.package_id === packageId || p.buyer_ref === packageId))
  if (owners.length === 0) return `No package ${ref} in this seat's media buys.`
  if (owners.length > 1) return `Package ${packageId} is in ${owners.length} media buys: name it as media_buy_id/package_id.`
  const buy = owners[0]!
  const p = buy.packages.find((x) => x.package_id === packageId || x.buyer_ref === packageId)!
  Object.assign(p, named(p, [...p.creative_ids.map((id) => ({ id })), { id: creativeId, weight }], iso(call.now)))
  rotate(call.store, buy, p)
  activate(call, buy, call.now)
  buy.updated_at = iso(call.now)
  saveBuy(call.store, buy)
  return undefined
}

/** Pauses or resumes what a package became: its campaign (if it may move) and its placement. */
function pausePackage (call: ToolCall, p: PackageRecord, paused: boolean): void {
  if (p.campaign_id !== undefined) {
    const c = call.store.campaigns.get(p.campaign_id)
    const movable = c !== undefined && (paused ? c.status === 'scheduled' || c.status === 'active' : c.status === 'paused')
    if (movable) moveCampaign(call.store, call.outbox, c, paused ? 'pause' : 'resume', call.now, 'update_media_buy')
  }
  if (p.assignment_id !== undefined) {
    const a = call.store.assignments.get(p.assignment_id)
    if (a !== undefined) setPlacementPaused(call.store, a, paused)
  }
}

type PackageChange = NonNullable<UpdateMediaBuyRequest['packages']>[number]

/**
 * One package's changes: its bid (auction), budget (a guaranteed package's spots booked again, in its dayparts'
 * hours), pacing, dayparts and signal (non-guaranteed), creatives and their weights (its placement's rotation) and
 * pause, carried to its campaign and placement. Call inside Store.write.
 */
function changePackage (call: ToolCall, buy: MediaBuyRecord, before: PackageRecord, change: PackageChange, at: string, created: string[]): PackageRecord {
  let p = before
  const campaign = p.campaign_id !== undefined ? call.store.campaigns.get(p.campaign_id) : undefined
  const screens = p.screen_ids.map((id) => call.store.screens.get(id)).filter((s): s is ScreenRecord => s !== undefined)
  if (change.bid_price !== undefined) {
    if (p.sale !== 'auction') throw new ApiError('invalid_parameter', `Package ${p.package_id} has a fixed price of $${p.rate} CPM: it takes no bid_price.`, { param: `${at}.bid_price` })
    p = { ...p, rate: rateOf('auction', { cpm: p.floor_price!, min_spend: 0 }, change.bid_price, p.product_id, `${at}.bid_price`) }
  }
  const spent = campaign !== undefined ? fromMicros(deliveredOf(call.store, campaign.campaign_id).spent_micros) : 0
  if (change.budget !== undefined && change.budget < spent) throw new ApiError('invalid_budget', `The package has spent $${spent} already.`, { param: `${at}.budget` })
  if (change.budget !== undefined) p = { ...p, budget: change.budget }
  if (change.targeting_overlay !== undefined) {
    const { dayparts: _dropped, segment: _segment, audience: _audience, ...rest } = p
    const dayparts = daypartsOf(change.targeting_overlay, buy, `${at}.targeting_overlay`)
    if (p.sale === 'guaranteed' && JSON.stringify(dayparts) !== JSON.stringify(before.dayparts)) throw new ApiError('validation_failed', `Package ${p.package_id} is guaranteed: its spots are booked in its dayparts' hours. Change its budget, or buy another package for other hours.`, { param: `${at}.targeting_overlay.daypart_targets` })
    p = { ...rest, ...(dayparts !== undefined ? { dayparts } : {}), ...signalOf(call, change.targeting_overlay, p.sale, `${at}.targeting_overlay`) }
  }
  if (change.pacing !== undefined) p = { ...p, pacing: change.pacing }
  const a = p.assignment_id !== undefined ? call.store.assignments.get(p.assignment_id) : undefined
  // What the budget buys is worked out again only when the money or the days change (not with today's audience alone).
  if (change.budget !== undefined || change.bid_price !== undefined || change.targeting_overlay !== undefined) {
    const bought = termsOf(call.store, screens, p, playDays(buy, p.dayparts), call.now)
    if (p.sale === 'guaranteed' && bought.spots !== before.spots_per_day) {
      if (p.dayparts === undefined) checkRoom(call, screens, buy, bought.spots, before.spots_per_day, p.rate, p.budget, `${at}.budget`)
      if (a !== undefined) respot(call.store, a, screens, bought.spots, `${at}.budget`)
      else {
        give(call.store, p.screen_ids, buy.start_date, buy.end_date, before.spots_per_day, p.dayparts)
        take(call.store, screens, buy.start_date, buy.end_date, bought.spots, `${at}.budget`, p.dayparts)
      }
    }
    p = { ...p, spots_per_day: bought.spots, impressions: bought.impressions }
  }
  if (a !== undefined && p.sale !== 'guaranteed') setPlacementTerms(call.store, a, { spots_per_day: p.spots_per_day, cpm: p.rate, pacing: p.pacing, dayparts: p.dayparts, audience: p.audience })
  if (change.creative_ids !== undefined || change.creative_assignments !== undefined || change.creatives !== undefined) {
    p = { ...p, ...named(p, requestedCreatives(call, change, at, created), iso(call.now)) }
    rotate(call.store, buy, p)
  }
  if (change.paused !== undefined && change.paused !== p.paused) {
    if (!buy.paused) pausePackage(call, p, change.paused)
    p = { ...p, paused: change.paused }
  }
  if (campaign !== undefined) {
    const fresh = call.store.campaigns.get(campaign.campaign_id)!
    const terms = { budget_usd: p.budget, pacing: p.pacing, ...(p.sale === 'guaranteed' ? { goal_impressions: Math.max(1, p.impressions) } : {}) }
    if (terms.budget_usd !== fresh.budget_usd || terms.pacing !== fresh.pacing || terms.goal_impressions !== fresh.goal_impressions) retermCampaign(call.store, call.outbox, fresh, terms, call.now)
  }
  return p
}

/** update_media_buy: every change applied, or none (a refusal rolls the whole update back). */
export function updateMediaBuy (call: ToolCall, args: Record<string, unknown>): Record<string, unknown> {
  const req = args as unknown as UpdateMediaBuyRequest
  const created: string[] = []
  const answer = record(call, () => {
    const buy = seatMediaBuy(call.store, call.seat.seat_id, req)
    if (statusOf(buy, call.now) === 'completed') throw new ApiError('invalid_transition', `Media buy ${buy.media_buy_id} ended at ${buy.end_time}.`, { status: 'completed' })
    const affected = new Set<string>()
    if (req.reporting_webhook !== undefined) scheduleReports(call.store, buy, reportingOf(call, req.reporting_webhook, buy, call.now, buy.reporting))
    if (req.paused !== undefined && req.paused !== buy.paused) {
      buy.paused = req.paused
      for (const p of buy.packages) if (!p.paused) { pausePackage(call, p, req.paused); affected.add(p.package_id) }
    }
    for (const [i, change] of (req.packages ?? []).entries()) {
      const at = `packages.${i}`
      const index = buy.packages.findIndex((p) => (change.package_id !== undefined ? p.package_id === change.package_id : change.buyer_ref !== undefined && p.buyer_ref === change.buyer_ref))
      if (index < 0) throw new ApiError('package_not_found', `Media buy ${buy.media_buy_id} has no package ${change.package_id ?? change.buyer_ref ?? '(name it by package_id or buyer_ref)'}.`, { param: `${at}.package_id` })
      const p = changePackage(call, buy, buy.packages[index]!, change, at, created)
      buy.packages[index] = p
      affected.add(p.package_id)
    }
    activate(call, buy, call.now)
    buy.updated_at = iso(call.now)
    saveBuy(call.store, buy)
    return {
      media_buy_id: buy.media_buy_id,
      buyer_ref: buy.buyer_ref,
      status: statusOf(buy, call.now),
      implementation_date: iso(call.now),
      affected_packages: buy.packages.filter((p) => affected.has(p.package_id)).map((p) => packageView(p, agentUrl(call))),
      sandbox: call.seat.status === 'sandbox'
    }
  })
  if (!call.dryRun) for (const id of created) call.moderator.schedule(id)
  return answer
}
