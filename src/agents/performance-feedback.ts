import { iso } from '../clock.js'
import { ApiError } from '../errors.js'
import type { ProvidePerformanceFeedbackRequest } from '../generated/types.js'
import { checkAccount, record, type ToolCall } from './call.js'
import { seatMediaBuy, seatMediaBuys } from './seat-buys.js'
import { productKeyOf, type ProductKey } from './products.js'
import type { FeedbackRecord, MediaBuyRecord, PackageRecord } from './records.js'

/** How many ratings a media buy keeps: the newest; a buyer rating daily over a long flight drops the oldest. */
export const FEEDBACK_KEPT = 100

/** How far past now a measurement period may end: the buyer's clock and ours differ a little. */
const SKEW_MS = 60_000

/**
 * provide_performance_feedback: the buyer's rating of a media buy, or of one package, over a period, kept with the buy.
 * It is shown with the package's delivery and ranks this buyer's products (segmentRatings).
 */
export function provideFeedback (call: ToolCall, args: Record<string, unknown>): Record<string, unknown> {
  const req = args as unknown as ProvidePerformanceFeedbackRequest
  checkAccount(call, req.account)
  const start = Date.parse(req.measurement_period.start)
  const end = Date.parse(req.measurement_period.end)
  if (Number.isNaN(start)) throw new ApiError('invalid_parameter', 'measurement_period.start must be an ISO 8601 date-time.', { param: 'measurement_period.start' })
  if (Number.isNaN(end)) throw new ApiError('invalid_parameter', 'measurement_period.end must be an ISO 8601 date-time.', { param: 'measurement_period.end' })
  if (end <= start) throw new ApiError('invalid_parameter', 'measurement_period.end must come after its start.', { param: 'measurement_period.end' })
  if (end > call.now + SKEW_MS) throw new ApiError('invalid_parameter', 'measurement_period.end is in the future: rate what has been measured.', { param: 'measurement_period.end' })
  record(call, () => {
    const buy = seatMediaBuy(call.store, call.seat.seat_id, req.media_buy_id !== undefined ? { media_buy_id: req.media_buy_id } : req.buyer_ref !== undefined ? { buyer_ref: req.buyer_ref } : {})
    let packageId: string | undefined
    if (req.package_id !== undefined) {
      const p = buy.packages.find((x) => x.package_id === req.package_id || x.buyer_ref === req.package_id)
      if (p === undefined) throw new ApiError('package_not_found', `Media buy ${buy.media_buy_id} has no package ${req.package_id}.`, { param: 'package_id' })
      packageId = p.package_id
    }
    const rating: FeedbackRecord = {
      ...(packageId !== undefined ? { package_id: packageId } : {}),
      ...(req.creative_id !== undefined ? { creative_id: req.creative_id } : {}),
      start: iso(start),
      end: iso(end),
      performance_index: req.performance_index,
      metric_type: req.metric_type ?? 'overall_performance',
      feedback_source: req.feedback_source ?? 'buyer_attribution',
      received_at: iso(call.now)
    }
    call.store.mediaBuys.putSync(buy.media_buy_id, { ...buy, feedback: [...(buy.feedback ?? []), rating].slice(-FEEDBACK_KEPT), updated_at: iso(call.now) })
  })
  return { success: true, sandbox: call.seat.status === 'sandbox' }
}

/** The ratings that apply to a package: its own and the whole buy's. */
function ratingsOf (buy: MediaBuyRecord, p: PackageRecord): FeedbackRecord[] {
  return (buy.feedback ?? []).filter((f) => f.package_id === undefined || f.package_id === p.package_id)
}

/** A package's feedback as get_media_buy_delivery shows it: the latest rating, and how many there are. */
export function packageFeedback (buy: MediaBuyRecord, p: PackageRecord): Record<string, unknown> | null {
  const ratings = ratingsOf(buy, p)
  const last = ratings.at(-1)
  if (last === undefined) return null
  return { performance_index: last.performance_index, metric_type: last.metric_type, feedback_source: last.feedback_source, measurement_period: { start: last.start, end: last.end }, ...(last.creative_id !== undefined ? { creative_id: last.creative_id } : {}), ratings: ratings.length }
}

/**
 * Whether a bought segment tells about a listed one: the same venue type and country, and the same state and city
 * where both name one (a rating of Austin gyms tells about Texas gyms, and the other way round).
 */
function related (bought: ProductKey, listed: ProductKey): boolean {
  if (bought.venue_type !== listed.venue_type || bought.country !== listed.country) return false
  if (bought.state !== undefined && listed.state !== undefined && bought.state !== listed.state) return false
  return bought.city === undefined || listed.city === undefined || bought.city.toLowerCase() === listed.city.toLowerCase()
}

/**
 * The seat's ratings of what it bought, as a rater of segments: for a listed segment, the mean index of every rating
 * of a package bought in a related segment (undefined: none).
 */
export function segmentRatings (call: Pick<ToolCall, 'store' | 'seat'>): (listed: ProductKey) => number | undefined {
  const rated: Array<{ key: ProductKey, index: number }> = []
  for (const buy of seatMediaBuys(call.store, call.seat.seat_id)) {
    for (const p of buy.packages) {
      const ratings = ratingsOf(buy, p)
      if (ratings.length === 0) continue
      const { key } = productKeyOf(p.product_id)
      for (const r of ratings) rated.push({ key, index: r.performance_index })
    }
  }
  return (listed) => {
    const mine = rated.filter((r) => related(r.key, listed))
    return mine.length === 0 ? undefined : Math.round(mine.reduce((s, r) => s + r.index, 0) / mine.length * 100) / 100
  }
}
