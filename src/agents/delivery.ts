import { DAY } from '../analytics/reports.js'
import { iso } from '../clock.js'
import { ApiError } from '../errors.js'
import type { GetMediaBuyDeliveryRequest } from '../generated/types.js'
import type { ToolCall } from './call.js'
import { seatMediaBuy, seatMediaBuys, statusOf } from './media-buys.js'
import type { MediaBuyRecord } from './records.js'

/** Delivered over what a guaranteed package should have delivered by now at an even pace (1 is on pace). */
function pacingIndex (buy: MediaBuyRecord, booked: number, delivered: number, now: number): number | undefined {
  const start = Date.parse(buy.start_time)
  const elapsed = Math.min(1, (now - start) / (Date.parse(buy.end_time) - start))
  return elapsed > 0 && booked > 0 ? Math.round((delivered / (booked * elapsed)) * 1e4) / 1e4 : undefined
}

/** AdCP delivery_status of a package from its campaign. */
function deliveryStatus (buy: MediaBuyRecord, campaign: { status: string, completed_reason?: string } | undefined, now: number): string | undefined {
  if (campaign === undefined) return undefined
  if (campaign.status === 'completed') return campaign.completed_reason === 'budget spent' ? 'budget_exhausted' : campaign.completed_reason === 'goal_impressions reached' ? 'goal_met' : 'flight_ended'
  if (now >= Date.parse(buy.end_time)) return 'flight_ended'
  return 'delivering'
}

/**
 * get_media_buy_delivery: per media buy and package, the campaign's own impressions and spend (a guaranteed package
 * is charged its fixed CPM on the impressions delivered, at most those booked), and from ClickHouse the completed
 * plays, screens and proofs of play of its creative in the window. When ClickHouse has not answered within
 * REPORT_WAIT_MS the counters are still given and partial_data says the rest is missing.
 */
export async function mediaBuyDelivery (call: ToolCall, args: Record<string, unknown>): Promise<Record<string, unknown>> {
  const req = args as GetMediaBuyDeliveryRequest
  const errors: Array<{ code: string, message: string, field: string }> = []
  let buys: MediaBuyRecord[]
  if (req.media_buy_ids === undefined && req.buyer_refs === undefined) buys = seatMediaBuys(call.store, call.seat.seat_id)
  else {
    const refs = [...(req.media_buy_ids ?? []).map((id, i) => ({ ref: { media_buy_id: id }, field: `media_buy_ids.${i}` })), ...(req.buyer_refs ?? []).map((r, i) => ({ ref: { buyer_ref: r }, field: `buyer_refs.${i}` }))]
    buys = []
    for (const { ref, field } of refs) {
      try {
        buys.push(seatMediaBuy(call.store, call.seat.seat_id, ref, field))
      } catch (err) {
        if (!(err instanceof ApiError)) throw err
        errors.push({ code: err.code, message: err.message, field })
      }
    }
    if (buys.length === 0) throw new ApiError('media_buy_not_found', errors.map((e) => e.message).join(' '), { param: errors[0]?.field ?? 'media_buy_ids' })
  }
  const from = req.start_date !== undefined ? Date.parse(`${req.start_date}T00:00:00Z`) : Math.min(...buys.map((b) => Date.parse(b.start_time)), call.now)
  const to = Math.min(req.end_date !== undefined ? Date.parse(`${req.end_date}T00:00:00Z`) + DAY - 1000 : call.now, call.now)
  if (to < from) throw new ApiError('invalid_date', 'end_date is before start_date.', { param: 'end_date' })
  const campaigns = new Map(buys.flatMap((b) => b.packages).filter((p) => p.campaign_id !== undefined).map((p) => [p.campaign_id!, call.store.campaigns.get(p.campaign_id!)]))
  const creatives = [...new Set([...campaigns.values()].filter((c) => c !== undefined).map((c) => c.creative_id))].sort()
  const key = `agents|delivery|${call.seat.seat_id.toLowerCase()}|${creatives.join(',')}|${Math.floor(from / 60_000)}|${Math.floor(to / 60_000)}`
  const played = creatives.length > 0 ? await call.results.settle(key, () => call.reports.creativeDelivery(call.seat.seat_id, creatives, { from, to })) : { state: 'ready' as const, data: [], computedAt: call.now, stale: false }
  const byCreative = new Map(played.state === 'ready' ? played.data.map((r) => [r.creative_id, r]) : [])
  const round = (v: number) => Math.round(v * 1e6) / 1e6
  const totals = { impressions: 0, spend: 0, media_buy_count: buys.length }
  const deliveries = buys.map((buy) => {
    const packages = buy.packages.map((p) => {
      const c = p.campaign_id !== undefined ? campaigns.get(p.campaign_id) : undefined
      const impressions = c?.impressions ?? 0
      // A guaranteed package pays its fixed CPM on what it delivered, at most what it booked.
      const spend = round((Math.min(impressions, p.impressions) * p.rate) / 1000)
      const plays = c !== undefined ? byCreative.get(c.creative_id) : undefined
      const status = deliveryStatus(buy, c, call.now)
      return {
        package_id: p.package_id,
        ...(p.buyer_ref !== undefined ? { buyer_ref: p.buyer_ref } : {}),
        impressions,
        spend,
        pricing_model: 'cpm',
        rate: p.rate,
        currency: 'USD',
        ...(status !== undefined ? { delivery_status: status } : {}),
        paused: p.paused || buy.paused,
        pacing_index: pacingIndex(buy, p.impressions, impressions, call.now),
        ext: { oohbid: { campaign_id: p.campaign_id ?? null, plays: plays?.plays ?? null, screens: plays?.screens ?? null, proofs: plays?.proofs ?? null, givt_passed: plays?.givt_passed ?? null } }
      }
    })
    const impressions = packages.reduce((s, p) => s + p.impressions, 0)
    const spend = round(packages.reduce((s, p) => s + p.spend, 0))
    totals.impressions += impressions
    totals.spend = round(totals.spend + spend)
    return { media_buy_id: buy.media_buy_id, buyer_ref: buy.buyer_ref, status: statusOf(buy, call.now), pricing_model: 'cpm', totals: { impressions, spend }, by_package: packages }
  })
  return {
    reporting_period: { start: iso(from), end: iso(to) },
    currency: 'USD',
    ...(played.state !== 'ready' ? { partial_data: true } : {}),
    aggregated_totals: totals,
    media_buy_deliveries: deliveries,
    ...(errors.length > 0 ? { errors } : {})
  }
}
