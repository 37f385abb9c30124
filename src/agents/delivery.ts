import { DAY } from '../analytics/reports.js'
import { iso } from '../clock.js'
import { ApiError } from '../errors.js'
import type { GetMediaBuyDeliveryRequest } from '../generated/types.js'
import type { CampaignRecord } from '../campaigns/records.js'
import { deliveredOf } from '../campaigns/delivery.js'
import { fromMicros } from '../money.js'
import type { Store } from '../store/store.js'
import type { ToolCall } from './call.js'
import { namedBuys, statusOf } from './seat-buys.js'
import { packageFeedback } from './performance-feedback.js'
import type { MediaBuyRecord, PackageRecord } from './records.js'

/**
 * What a package delivered over what it should have by now at an even pace over its flight (1 is on pace): booked
 * impressions for a guaranteed package, budget for the others (an auction package buys more when it clears lower).
 */
function pacingIndex (buy: MediaBuyRecord, due: number, delivered: number, now: number): number | undefined {
  const start = Date.parse(buy.start_time)
  const elapsed = Math.min(1, (now - start) / (Date.parse(buy.end_time) - start))
  return elapsed > 0 && due > 0 ? Math.round((delivered / (due * elapsed)) * 1e4) / 1e4 : undefined
}

/** AdCP delivery_status of a package from its campaign. */
function deliveryStatus (buy: MediaBuyRecord, campaign: CampaignRecord | undefined, now: number): string | undefined {
  if (campaign === undefined) return undefined
  if (campaign.status === 'completed') return campaign.completed_reason === 'budget spent' ? 'budget_exhausted' : campaign.completed_reason === 'goal_impressions reached' ? 'goal_met' : 'flight_ended'
  if (now >= Date.parse(buy.end_time)) return 'flight_ended'
  return 'delivering'
}

const round = (v: number) => Math.round(v * 1e6) / 1e6

/**
 * What a package has delivered so far, from its campaign: impressions, spend (what its plays were charged: the fixed
 * CPM, or the auction's clearing prices, on the audience each play counted, never past the budget), pace and status.
 * get_media_buy_delivery and get_media_buys' snapshots both report these.
 */
export function packageFigures (store: Store, buy: MediaBuyRecord, p: PackageRecord, now: number): { impressions: number, spend: number, pacing_index?: number, delivery_status?: string, campaign?: CampaignRecord } {
  const campaign = p.campaign_id !== undefined ? store.campaigns.get(p.campaign_id) : undefined
  const { impressions, spent_micros: spent } = campaign !== undefined ? deliveredOf(store, campaign.campaign_id) : { impressions: 0, spent_micros: 0 }
  const spend = fromMicros(spent)
  const pacing = p.sale === 'guaranteed' ? pacingIndex(buy, p.impressions, impressions, now) : pacingIndex(buy, p.budget, spend, now)
  const status = deliveryStatus(buy, campaign, now)
  return {
    impressions,
    spend: round(spend),
    ...(pacing !== undefined ? { pacing_index: pacing } : {}),
    ...(status !== undefined ? { delivery_status: status } : {}),
    ...(campaign !== undefined ? { campaign } : {})
  }
}

/** ClickHouse's plays, screens and proofs of play of a creative, as delivery adds them when it has them. */
type Plays = Awaited<ReturnType<ToolCall['reports']['creativeDelivery']>>[number]

/**
 * One media buy's delivery, per package: the campaign's impressions, spend, pace and status, the rate it paid, and
 * ClickHouse's plays and proofs where `plays` has them (null otherwise). get_media_buy_delivery and the scheduled
 * reports (delivery-reports.ts) both answer this.
 */
export function buyDelivery (store: Store, buy: MediaBuyRecord, now: number, figures = new Map<PackageRecord, ReturnType<typeof packageFigures>>(), plays = new Map<string, Plays>()) {
  const packages = buy.packages.map((p) => {
    const { campaign, ...f } = figures.get(p) ?? packageFigures(store, buy, p, now)
    const played = campaign !== undefined ? plays.get(campaign.creative_id) : undefined
    return {
      package_id: p.package_id,
      ...(p.buyer_ref !== undefined ? { buyer_ref: p.buyer_ref } : {}),
      ...f,
      pricing_model: 'cpm',
      // An auction package's rate is what it paid on average so far (its bid until it has played).
      rate: p.sale === 'auction' && f.impressions > 0 ? round((f.spend / f.impressions) * 1000) : p.rate,
      currency: 'USD',
      paused: p.paused || buy.paused,
      ext: { oohbid: { campaign_id: p.campaign_id ?? null, plays: played?.plays ?? null, screens: played?.screens ?? null, proofs: played?.proofs ?? null, givt_passed: played?.givt_passed ?? null, performance_feedback: packageFeedback(buy, p) } }
    }
  })
  const impressions = packages.reduce((s, p) => s + p.impressions, 0)
  const spend = round(packages.reduce((s, p) => s + p.spend, 0))
  return { media_buy_id: buy.media_buy_id, buyer_ref: buy.buyer_ref, status: statusOf(buy, now), pricing_model: 'cpm', totals: { impressions, spend }, by_package: packages }
}

/**
 * get_media_buy_delivery: per media buy and package, the campaign's own impressions and spend (each play charged at
 * the package's fixed CPM or the auction's clearing price), and from ClickHouse the completed
 * plays, screens and proofs of play of its creative in the window. When ClickHouse has not answered within
 * REPORT_WAIT_MS the counters are still given and partial_data says the rest is missing.
 */
export async function mediaBuyDelivery (call: ToolCall, args: Record<string, unknown>): Promise<Record<string, unknown>> {
  const req = args as GetMediaBuyDeliveryRequest
  const { buys, errors } = namedBuys(call, req)
  const from = req.start_date !== undefined ? Date.parse(`${req.start_date}T00:00:00Z`) : Math.min(...buys.map((b) => Date.parse(b.start_time)), call.now)
  const to = Math.min(req.end_date !== undefined ? Date.parse(`${req.end_date}T00:00:00Z`) + DAY - 1000 : call.now, call.now)
  if (to < from) throw new ApiError('invalid_date', 'end_date is before start_date.', { param: 'end_date' })
  const figures = new Map(buys.flatMap((b) => b.packages.map((p) => [p, packageFigures(call.store, b, p, call.now)] as const)))
  const creatives = [...new Set([...figures.values()].flatMap((f) => f.campaign !== undefined ? [f.campaign.creative_id] : []))].sort()
  const key = `agents|delivery|${call.seat.seat_id.toLowerCase()}|${creatives.join(',')}|${Math.floor(from / 60_000)}|${Math.floor(to / 60_000)}`
  const played = creatives.length > 0 ? await call.results.settle(key, () => call.reports.creativeDelivery(call.seat.seat_id, creatives, { from, to })) : { state: 'ready' as const, data: [], computedAt: call.now, stale: false }
  const byCreative = new Map(played.state === 'ready' ? played.data.map((r) => [r.creative_id, r]) : [])
  const deliveries = buys.map((buy) => buyDelivery(call.store, buy, call.now, figures, byCreative))
  const totals = { impressions: deliveries.reduce((s, d) => s + d.totals.impressions, 0), spend: round(deliveries.reduce((s, d) => s + d.totals.spend, 0)), media_buy_count: buys.length }
  return {
    reporting_period: { start: iso(from), end: iso(to) },
    currency: 'USD',
    ...(played.state !== 'ready' ? { partial_data: true } : {}),
    aggregated_totals: totals,
    media_buy_deliveries: deliveries,
    ...(errors.length > 0 ? { errors } : {})
  }
}
