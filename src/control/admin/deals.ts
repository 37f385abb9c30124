import { give, take } from '../../campaigns/ledger.js'
import { dealEvent } from '../../campaigns/deals.js'
import { matchingScreens } from '../../campaigns/targeting.js'
import { datesBetween } from '../../inventory/hours.js'
import { iso } from '../../clock.js'
import type { Deps } from '../../deps.js'
import { ApiError } from '../../errors.js'
import type { ActionRequest } from '../../generated/types.js'
import { ok, route, type RouteDef } from '../../http/route.js'
import type { DealRecord } from '../../store/records.js'
import { dealView } from '../campaigns/deals.js'

type DealAction = 'approve' | 'reject' | 'pause' | 'resume'

const MOVES: Record<DealAction, { from: DealRecord['status'][], to: DealRecord['status'], past: string }> = {
  approve: { from: ['pending'], to: 'active', past: 'approved' },
  reject: { from: ['pending'], to: 'rejected', past: 'rejected' },
  pause: { from: ['active'], to: 'paused', past: 'paused' },
  resume: { from: ['paused'], to: 'active', past: 'resumed' }
}

/**
 * Operator moves of deals. Approving a Guaranteed deal books its committed volume out of availability (impressions
 * spread evenly over matching screens and days, one play per impression), or fails with 409 capacity_unavailable.
 */
export function adminDealRoutes ({ store, outbox, inventory }: Deps): RouteDef[] {
  const common = { tag: 'Operator', envelope: 'flat', auth: 'admin', rateGroup: 'ops' } as const
  const action = (name: DealAction): RouteDef => route<ActionRequest>({
    ...common,
    method: 'post',
    path: `/admin/v1/deals/:dealId/${name}`,
    summary: `${name[0]!.toUpperCase()}${name.slice(1)} a deal`,
    description: `From ${MOVES[name].from.join(', ')} to ${MOVES[name].to}; otherwise 409 invalid_transition. Audited as audit.deal.${MOVES[name].past}; emits deal.${MOVES[name].past}.`,
    body: 'ActionRequest',
    data: 'Deal',
    errors: ['deal_not_found', 'invalid_transition', 'capacity_unavailable'],
    handler: (ctx) => {
      const d = store.deals.get(ctx.params.dealId!)
      if (d === undefined) throw new ApiError('deal_not_found', `No deal ${ctx.params.dealId}.`, { param: 'dealId' })
      const move = MOVES[name]
      if (!move.from.includes(d.status)) throw new ApiError('invalid_transition', `Cannot ${name} a ${d.status} deal.`, { status: d.status })
      const next: DealRecord = { ...d, status: move.to, updated_at: iso(ctx.now) }
      if (ctx.body.reason !== undefined) next.reason = ctx.body.reason
      if (name === 'approve' && d.type === 'Guaranteed') {
        const { ids } = matchingScreens(store, inventory.sourcesEnabled(), d.targeting, d.fixed_cpm, 10_000)
        if (ids.length === 0) throw new ApiError('capacity_unavailable', 'No screen matches this Guaranteed deal\'s targeting.')
        const perDay = Math.ceil(d.impressions_goal! / datesBetween(d.start_date, d.end_date).length / ids.length)
        take(store, ids.map((id) => store.screens.get(id)!), d.start_date, d.end_date, perDay, 'targeting.screens')
        next.booked_per_day = perDay
        next.booked_screens = ids
      }
      if (name === 'reject' && d.booked_screens !== undefined) give(store, d.booked_screens, d.start_date, d.end_date, d.booked_per_day!)
      store.deals.putSync(d.deal_id, next)
      outbox.append(`deal.${move.past}`, `deal:${d.deal_id}`, dealEvent(next, d.status), d.proposed_by)
      outbox.append(`audit.deal.${move.past}`, `deal:${d.deal_id}`, { actor: 'operator', from: d.status, to: next.status, reason: ctx.body.reason ?? null })
      return ok(dealView(next))
    }
  })
  return [
    route({
      ...common,
      method: 'get',
      path: '/admin/v1/deals',
      summary: 'All deals (pending ones first)',
      handler: () => ok({ deals: [...store.deals.getRange()].map(({ value }) => value).sort((a, b) => Number(b.status === 'pending') - Number(a.status === 'pending') || a.created_at.localeCompare(b.created_at)).map(dealView) })
    }),
    action('approve'),
    action('reject'),
    action('pause'),
    action('resume')
  ]
}
