import { DEAL_MOVES, dealView, moveDeal, type DealAction } from '../campaigns/deals.js'
import type { Deps } from '../deps.js'
import { catalogRecord } from '../campaigns/catalog-lock.js'
import type { ActionRequest } from '../generated/types.js'
import { ok, route, type RouteDef } from '../http/route.js'

/** The operator's side of deals: the list, and the moves of the deal state machine (campaigns/deals.ts). */
export function adminDealRoutes ({ store, outbox, inventory }: Deps): RouteDef[] {
  const common = { tag: 'Operator', envelope: 'flat', auth: 'admin', rateGroup: 'ops' } as const
  const action = (name: DealAction): RouteDef => route<ActionRequest>({
    ...common,
    method: 'post',
    path: `/admin/v1/deals/:dealId/${name}`,
    summary: `${name[0]!.toUpperCase()}${name.slice(1)} a deal`,
    description: `From ${DEAL_MOVES[name].from.join(', ')} to ${DEAL_MOVES[name].to}; otherwise 409 invalid_transition. Audited as audit.deal.${DEAL_MOVES[name].past}; emits deal.${DEAL_MOVES[name].past}.`,
    body: 'ActionRequest',
    data: 'Deal',
    errors: ['deal_not_found', 'invalid_transition', 'capacity_unavailable'],
    exclusive: catalogRecord,
    books: true,
    handler: (ctx) => ok(dealView(moveDeal({ store, outbox, inventory }, ctx.params.dealId!, name, ctx.body.reason, ctx.now)))
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
