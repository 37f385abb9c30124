import { iso } from '../clock.js'
import { ApiError } from '../errors.js'
import type { GetMediaBuysRequest } from '../generated/types.js'
import { seatCreativeByCrid } from '../creatives/register.js'
import { checkAccount, type ToolCall } from './call.js'
import { adcpStatusOf, rejectionOf } from './creative-upsert.js'
import { packageFigures } from './delivery.js'
import { namedBuys, statusOf } from './seat-buys.js'

const PAGE = 50

/**
 * get_media_buys: the seat's media buys with their status and packages, each creative's approval as moderation left
 * it (so an agent learns when its package can play), and with include_snapshot what each package has delivered.
 */
export function getMediaBuys (call: ToolCall, args: Record<string, unknown>): Record<string, unknown> {
  const req = args as GetMediaBuysRequest
  checkAccount(call, req.account)
  const { buys, errors } = namedBuys(call, req)
  const wanted = req.status_filter === undefined ? undefined : new Set(Array.isArray(req.status_filter) ? req.status_filter : [req.status_filter])
  const matching = buys.filter((b) => wanted === undefined || wanted.has(statusOf(b, call.now)))
  // The cursor names the last buy of the previous page, so buys made meanwhile (they come first) shift nothing.
  const after = req.pagination?.cursor !== undefined ? Buffer.from(req.pagination.cursor, 'base64url').toString() : undefined
  const start = after !== undefined ? matching.findIndex((b) => b.media_buy_id === after) + 1 : 0
  if (after !== undefined && start === 0) throw new ApiError('invalid_parameter', 'pagination.cursor is not one this agent gave for this query.', { param: 'pagination.cursor' })
  const page = matching.slice(start, start + (req.pagination?.max_results ?? PAGE))
  const more = start + page.length < matching.length
  return {
    media_buys: page.map((buy) => ({
      media_buy_id: buy.media_buy_id,
      buyer_ref: buy.buyer_ref,
      status: statusOf(buy, call.now),
      currency: 'USD',
      total_budget: buy.packages.reduce((s, p) => s + p.budget, 0),
      start_time: buy.start_time,
      end_time: buy.end_time,
      creative_deadline: buy.start_time,
      created_at: buy.created_at,
      updated_at: buy.updated_at,
      packages: buy.packages.map((p) => {
        const { campaign, ...figures } = packageFigures(call.store, buy, p, call.now)
        return {
          package_id: p.package_id,
          ...(p.buyer_ref !== undefined ? { buyer_ref: p.buyer_ref } : {}),
          product_id: p.product_id,
          budget: p.budget,
          currency: 'USD',
          impressions: p.impressions,
          start_time: buy.start_time,
          end_time: buy.end_time,
          paused: p.paused || buy.paused,
          creative_approvals: p.creative_ids.map((id) => {
            const c = seatCreativeByCrid(call.store, buy.seat_id, id)
            const reason = c !== undefined ? rejectionOf(c) : 'No creative with this creative_id was synced.'
            const status = c !== undefined ? adcpStatusOf(c.status) : undefined
            return { creative_id: id, ...(status === 'approved' || status === 'rejected' || status === 'pending_review' ? { approval_status: status } : {}), ...(reason !== undefined ? { rejection_reason: reason } : {}) }
          }),
          ...(req.include_snapshot === true ? { snapshot: { as_of: iso(call.now), staleness_seconds: 0, ...figures, currency: 'USD' } } : {}),
          ext: { oohbid: { campaign_id: campaign?.campaign_id ?? null, assignment_id: p.assignment_id ?? null, spots_per_day: p.spots_per_day, screens: p.screen_ids.length } }
        }
      })
    })),
    ...(errors.length > 0 ? { errors } : {}),
    pagination: { has_more: more, ...(more ? { cursor: Buffer.from(page.at(-1)!.media_buy_id).toString('base64url') } : {}) },
    sandbox: call.seat.status === 'sandbox'
  }
}
