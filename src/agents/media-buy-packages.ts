// A media buy's packages: opened (guaranteed spots booked), given their creatives, changed and paused, each carried to
// the campaign and placement it became. Call inside Store.write.
import { iso } from '../clock.js'
import { ApiError } from '../errors.js'
import type { MediaBuyPackageRequest, UpdateMediaBuyRequest } from '../generated/types.js'
import { moveCampaign, retermCampaign } from '../campaigns/campaigns.js'
import { deliveredOf } from '../campaigns/delivery.js'
import { fromMicros } from '../money.js'
import { respot, setPlacementPaused, setPlacementTerms } from '../campaigns/placements.js'
import { rebook, take } from '../campaigns/screen-bookings.js'
import type { ScreenRecord } from '../inventory/records.js'
import type { ToolCall } from './call.js'
import { inlineCreativeId, upsertCreative } from './creative-upsert.js'
import { PRICING_OPTION, priceOf, productKeyOf, productScreens } from './products.js'
import type { MediaBuyRecord, PackageRecord } from './records.js'
import { days, termsOf, rateOf, daypartsOf, signalOf, listedScreens, playDays, checkRoom } from './media-buy-terms.js'
import { rotate } from './media-buy-activation.js'

/**
 * Opens package i of a new media buy: checks the product, its pricing option, the price and the money, and books
 * its spots when it is guaranteed (its creatives are the caller's).
 */
export function openPackage (call: ToolCall, buy: MediaBuyRecord, p: MediaBuyPackageRequest, i: number): Omit<PackageRecord, 'creative_ids' | 'assigned_at' | 'weights'> {
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
  let claim: string | undefined
  if (sale === 'guaranteed') {
    // A daypart line is checked hour by hour as take books it, which names the short screen, day and hour.
    if (dayparts === undefined) checkRoom(call, screens, buy, bought.spots, 0, rate, p.budget, `${at}.budget`)
    claim = take(call.store, screens, buy.start_date, buy.end_date, bought.spots, call.now, `${at}.budget`, dayparts).claim
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
    ...(claim !== undefined ? { claim } : {}),
    paused: false
  }
}

/** A creative a request names for a package, by the buyer's creative_id, with the weight it gave (if any). */
interface Named { id: string, weight?: number | undefined }

/**
 * A package's creatives, their weights and when each was first attached: one named again keeps its date, and its
 * weight unless it is given another.
 */
export function named (p: Pick<PackageRecord, 'assigned_at' | 'weights'> | undefined, entries: readonly Named[], at: string): Pick<PackageRecord, 'creative_ids' | 'assigned_at' | 'weights'> {
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
export function requestedCreatives (call: ToolCall, p: Pick<MediaBuyPackageRequest, 'creative_ids' | 'creative_assignments' | 'creatives'>, at: string, created: string[]): Named[] {
  const inline = (p.creatives ?? []).map((c, j): Named => {
    const crid = c.creative_id ?? inlineCreativeId(c)
    const done = upsertCreative(call, c, crid)
    if (done.action === 'failed') throw new ApiError('invalid_parameter', done.errors.join(' '), { param: `${at}.creatives.${j}` })
    if (done.action !== 'unchanged') created.push(done.creative!.creative_id)
    return { id: crid, weight: c.weight }
  })
  return [...(p.creative_ids ?? []).map((id) => ({ id })), ...(p.creative_assignments ?? []).map((a) => ({ id: a.creative_id, weight: a.weight })), ...inline]
}

/** Pauses or resumes what a package became: its campaign (if it may move) and its placement. */
export function pausePackage (call: ToolCall, p: PackageRecord, paused: boolean): void {
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
export function changePackage (call: ToolCall, buy: MediaBuyRecord, before: PackageRecord, change: PackageChange, at: string, created: string[]): PackageRecord {
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
      if (a !== undefined) p = { ...p, claim: respot(call.store, a, screens, bought.spots, call.now, `${at}.budget`).claim! }
      else p = { ...p, claim: rebook(call.store, { claim: p.claim, screen_ids: p.screen_ids, start_date: buy.start_date, end_date: buy.end_date, spots: before.spots_per_day, dayparts: p.dayparts }, screens, bought.spots, call.now, `${at}.budget`, p.dayparts).claim }
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
