import { randomUUID } from 'node:crypto'
import { catalogRecord } from '../catalog-lock.js'
import { normalizeTargeting } from '../targeting.js'
import { dealEvent, dealView } from '../deals.js'
import { iso } from '../../clock.js'
import type { Deps } from '../../deps.js'
import { ApiError } from '../../errors.js'
import type { DealProposal, ListQuery } from '../../generated/types.js'
import { ok, route, type RouteDef } from '../../http/route.js'
import { withDefaults } from '../../http/validate.js'
import type { DealRecord } from '../records.js'
import { flightOf } from '../inputs.js'

/** Whether a seat may see a deal: invited (the proposer always is) and approved, or its own proposal. */
function offeredTo (d: DealRecord, seatId: string): boolean {
  const seat = seatId.toLowerCase()
  const invited = d.invited_seats.some((s) => s.toLowerCase() === seat)
  return invited && (d.status !== 'pending' && d.status !== 'rejected' ? true : d.proposed_by?.toLowerCase() === seat)
}

/** Deals (spec, Deals): the seat's offered deals, one deal, and proposals that wait for the operator. */
export function dealRoutes ({ store, outbox }: Deps): RouteDef[] {
  const common = { tag: 'Deals', envelope: 'flat', auth: 'seat', rateGroup: 'deals' } as const
  const lookup = (seatId: string, id: string | undefined): DealRecord => {
    if (!id) throw new ApiError('missing_deal_id', 'Give the deal id: GET /openrtb/v2/deals/{dealId}.', { param: 'dealId' })
    const d = store.deals.get(id)
    if (d === undefined || !offeredTo(d, seatId)) throw new ApiError('deal_not_found', `No deal ${id} is offered to this seat.`, { param: 'dealId' })
    return d
  }
  return [
    route<undefined, ListQuery>({
      ...common,
      scope: 'deals:read',
      method: 'get',
      path: '/openrtb/v2/deals',
      summary: 'Deals offered to the seat (and its own proposals)',
      querySchema: 'ListQuery',
      data: 'DealList',
      handler: (ctx) => {
        const seatId = ctx.principal!.seat!.seat_id
        const deals = [...store.deals.getRange()].map(({ value }) => value)
          .filter((d) => offeredTo(d, seatId) && (ctx.q.status === undefined || d.status === ctx.q.status))
          .sort((a, b) => b.created_at.localeCompare(a.created_at) || a.deal_id.localeCompare(b.deal_id))
        const start = ctx.q.cursor !== undefined ? Number(Buffer.from(ctx.q.cursor, 'base64url').toString()) : 0
        if (!Number.isInteger(start) || start < 0) throw new ApiError('invalid_parameter', 'cursor is not valid.', { param: 'cursor' })
        const limit = ctx.q.limit ?? 50
        const page = deals.slice(start, start + limit)
        const more = start + limit < deals.length
        return ok({ deals: page.map(dealView), cursor: { next: more ? Buffer.from(String(start + limit)).toString('base64url') : null, has_more: more } })
      }
    }),
    route({
      ...common,
      scope: 'deals:read',
      method: 'get',
      path: '/openrtb/v2/deals/:dealId',
      summary: 'One deal: floor, caps, dates',
      description: 'A deal of another seat, or one not offered to this seat, is 404 deal_not_found. The lookup without an id (GET /openrtb/v2/deals/) answers 400 missing_deal_id.',
      data: 'Deal',
      errors: ['deal_not_found', 'missing_deal_id'],
      handler: (ctx) => ok(dealView(lookup(ctx.principal!.seat!.seat_id, ctx.params.dealId)))
    }),
    route({
      ...common,
      scope: 'deals:read',
      method: 'get',
      path: '/openrtb/v2/deals/',
      summary: 'A deal lookup without its id: 400 missing_deal_id',
      documented: false,
      errors: ['missing_deal_id'],
      handler: (ctx) => ok(dealView(lookup(ctx.principal!.seat!.seat_id, undefined)))
    }),
    route<DealProposal>({
      ...common,
      scope: 'campaigns:write',
      method: 'post',
      path: '/openrtb/v2/deals/propose',
      summary: 'Propose a deal; it waits for operator approval',
      body: 'DealProposal',
      data: 'Deal',
      status: 201,
      errors: ['missing_floor_cpm', 'deal_already_exists', 'invalid_date'],
      exclusive: catalogRecord,
      handler: (ctx) => {
        const seatId = ctx.principal!.seat!.seat_id
        const id = ctx.body.deal_id ?? `deal-${randomUUID().slice(0, 13)}`
        if (store.deals.get(id) !== undefined) throw new ApiError('deal_already_exists', `Deal ${id} exists.`, { param: 'deal_id' })
        const b = { ...withDefaults<DealProposal, 'type'>('DealProposal', ctx.body, ctx.warn), ...flightOf(ctx.body, ctx.now, ctx.warn) }
        if (b.type !== 'PMP' && b.fixed_cpm === undefined) throw new ApiError('missing_required_field', `${b.type} deals need fixed_cpm.`, { param: 'fixed_cpm' })
        if (b.fixed_cpm !== undefined && b.fixed_cpm < b.floor_cpm) throw new ApiError('invalid_parameter', 'fixed_cpm is below floor_cpm.', { param: 'fixed_cpm' })
        if (b.type === 'Guaranteed' && b.impressions_goal === undefined) throw new ApiError('missing_required_field', 'Guaranteed deals need impressions_goal.', { param: 'impressions_goal' })
        const now = iso(ctx.now)
        const invited = [...new Set([seatId, ...(b.invited_seats ?? [])])]
        const d: DealRecord = { deal_id: id, type: b.type, status: 'pending', floor_cpm: b.floor_cpm, invited_seats: invited, proposed_by: seatId, targeting: normalizeTargeting(b.targeting), start_date: b.start_date, end_date: b.end_date, created_at: now, updated_at: now }
        if (b.name !== undefined) d.name = b.name
        if (b.fixed_cpm !== undefined) d.fixed_cpm = b.fixed_cpm
        if (b.impressions_goal !== undefined) d.impressions_goal = b.impressions_goal
        if (b.daily_impression_cap !== undefined) d.daily_impression_cap = b.daily_impression_cap
        store.deals.putSync(id, d)
        outbox.append('deal.proposed', `deal:${id}`, dealEvent(d, null), seatId)
        return ok(dealView(d), 201)
      }
    })
  ]
}
