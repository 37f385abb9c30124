// The AdCP media buy tools' commands (create_media_buy, update_media_buy, a creative attached to a package) and how a
// buy and its packages are shown; terms, packages and activation are in the media-buy-*.ts beside it.
import { randomUUID } from 'node:crypto'
import { iso } from '../clock.js'
import { ApiError } from '../errors.js'
import type { CreateMediaBuyRequest, UpdateMediaBuyRequest } from '../generated/types.js'
import { indexForSeat } from '../accounts/seat-lists.js'
import { agentUrl, checkAccount, record, type ToolCall } from './call.js'
import { reportingOf, scheduleReports } from './delivery-reports.js'
import { saveBuy, seatMediaBuy, seatMediaBuys, statusOf } from './seat-buys.js'
import { deliveryTypeOf } from './products.js'
import type { MediaBuyRecord, PackageRecord } from './records.js'
import { dayNameOf, flightOf } from './media-buy-terms.js'
import { openPackage, named, requestedCreatives, pausePackage, changePackage } from './media-buy-packages.js'
import { rotate, activate } from './media-buy-activation.js'

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
