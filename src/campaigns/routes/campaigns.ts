import { createCampaign, moveCampaign } from '../campaigns.js'
import { campaignView } from '../delivery.js'
import { catalogRecord } from '../catalog-lock.js'
import { normalizeTargeting } from '../targeting.js'
import type { Deps } from '../../deps.js'
import type { ActionRequest, Assignment, AssignmentRequest, CampaignRequest, ListQuery } from '../../generated/types.js'
import { ok, route, type RouteDef } from '../../http/route.js'
import { withDefaults } from '../../http/validate.js'
import { qualityOf, vasOf } from '../../inventory/adslot-index.js'
import { summaryOf } from '../../inventory/rows.js'
import type { AssignmentRecord } from '../records.js'
import { seatPage } from '../../accounts/seat-lists.js'
import { approvedCreative, flightOf, usableScreens } from '../inputs.js'
import { place, seatCampaign } from '../placements.js'

function assignmentView ({ seat_id: _seat, claim: _claim, ...a }: AssignmentRecord): Assignment {
  return a
}

/** Campaigns and direct assignments (spec, Campaigns). */
export function campaignRoutes (deps: Deps): RouteDef[] {
  const { store, outbox, inventory } = deps
  const common = { tag: 'Campaigns', envelope: 'flat', auth: 'seat', scope: 'campaigns:write', rateGroup: 'campaigns' } as const
  const move = (name: 'pause' | 'resume') => route<ActionRequest>({
    ...common,
    method: 'post',
    path: `/openrtb/v2/campaigns/:id/${name}`,
    summary: `${name === 'pause' ? 'Pause' : 'Resume'} a campaign`,
    description: name === 'pause' ? 'From scheduled or active; a paused campaign does not bid or play.' : 'From paused: back to scheduled, active or completed as its dates say.',
    body: 'ActionRequest',
    data: 'Campaign',
    errors: ['campaign_not_found', 'invalid_transition'],
    exclusive: catalogRecord,
    handler: (ctx) => ok(campaignView(store, moveCampaign(store, outbox, seatCampaign(store, ctx.principal!.seat!.seat_id, ctx.params.id!), name, ctx.now, ctx.body.reason ?? null)))
  })

  return [
    route<CampaignRequest>({
      ...common,
      method: 'post',
      path: '/openrtb/v2/campaigns',
      summary: 'Create a campaign for an approved creative; the answer lists the matching screens',
      body: 'CampaignRequest',
      data: 'Campaign',
      status: 201,
      errors: ['missing_creative_id', 'missing_name', 'creative_not_found', 'validation_failed', 'invalid_budget', 'invalid_date'],
      handler: (ctx) => {
        const seatId = ctx.principal!.seat!.seat_id
        approvedCreative(store, seatId, ctx.body.creative_id)
        const body = { ...withDefaults<CampaignRequest, 'budget_usd' | 'pacing'>('CampaignRequest', ctx.body, ctx.warn), ...flightOf(ctx.body, ctx.now, ctx.warn) }
        const { campaign: c, ids } = createCampaign(deps, seatId, { ...body, targeting: normalizeTargeting(body.targeting) }, ctx.now)
        if (c.matching_screens === 0) ctx.warn('No screen matches this targeting now; the campaign will match screens registered later.')
        const screens = ids.map((sid) => {
          const s = store.screens.get(sid)!
          const pos = store.adslotPos.get(sid)!
          return { ...summaryOf(s), data_quality: qualityOf(pos[1]), vas_7d: vasOf(pos[2]) }
        })
        return ok({ ...campaignView(store, c), screens }, 201)
      }
    }),
    route<undefined, ListQuery>({
      ...common,
      method: 'get',
      path: '/openrtb/v2/campaigns',
      summary: 'List the seat\'s campaigns, newest first',
      querySchema: 'ListQuery',
      data: 'CampaignList',
      handler: (ctx) => {
        const { items, cursor } = seatPage(store, 'campaign', ctx.principal!.seat!.seat_id, ctx.q, (id) => store.campaigns.get(id), (c) => campaignView(store, c))
        return ok({ campaigns: items, cursor })
      }
    }),
    route({
      ...common,
      method: 'get',
      path: '/openrtb/v2/campaigns/:id',
      summary: 'One campaign with its delivery so far',
      data: 'Campaign',
      errors: ['campaign_not_found'],
      handler: (ctx) => ok(campaignView(store, seatCampaign(store, ctx.principal!.seat!.seat_id, ctx.params.id!)))
    }),
    move('pause'),
    move('resume'),
    route<AssignmentRequest>({
      ...common,
      method: 'post',
      path: '/openrtb/v2/campaigns/assign',
      summary: 'Assign an approved creative to screens for a date range',
      body: 'AssignmentRequest',
      data: 'Assignment',
      status: 201,
      errors: ['missing_creative_id', 'missing_screen_ids', 'invalid_screen', 'creative_not_found', 'validation_failed', 'invalid_date', 'capacity_unavailable', 'campaign_not_found'],
      books: true,
      handler: (ctx) => {
        const seatId = ctx.principal!.seat!.seat_id
        approvedCreative(store, seatId, ctx.body.creative_id)
        if (ctx.body.campaign_id !== undefined) seatCampaign(store, seatId, ctx.body.campaign_id)
        const screens = usableScreens(inventory, ctx.body.screen_ids)
        const body = { ...withDefaults<AssignmentRequest, 'spots_per_day'>('AssignmentRequest', ctx.body, ctx.warn), ...flightOf(ctx.body, ctx.now, ctx.warn, screens) }
        return ok(assignmentView(place(deps, seatId, body, screens, ctx.now, 'assignment')), 201)
      }
    }),
    route<undefined, ListQuery>({
      ...common,
      method: 'get',
      path: '/openrtb/v2/assignments',
      summary: 'List the seat\'s assignments (placements), newest first',
      querySchema: 'ListQuery',
      data: 'AssignmentList',
      handler: (ctx) => {
        const { items, cursor } = seatPage(store, 'assignment', ctx.principal!.seat!.seat_id, ctx.q, (id) => store.assignments.get(id), assignmentView)
        return ok({ assignments: items, cursor })
      }
    })
  ]
}
