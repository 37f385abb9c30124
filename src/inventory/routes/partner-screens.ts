import { iso } from '../../clock.js'
import type { Deps } from '../../deps.js'
import { ApiError } from '../../errors.js'
import type { PartnerListQuery, PartnerScreen, ScreenSettingsRequest } from '../../generated/types.js'
import { ok, route, type RouteDef } from '../../http/route.js'
import { present } from '../fein.js'
import { partnerRecord, type Inventory } from '../inventory.js'
import type { ScreenRecord } from '../records.js'
import { partnerScreens } from './partner-devices.js'

/** A screen as its partner sees it: settings, status and the audience state buyers see. */
export function partnerScreenView (inventory: Inventory, s: ScreenRecord, now: number): PartnerScreen {
  const status = inventory.statusOf(s.screen_id)
  return {
    screen_id: s.screen_id,
    device_id: s.device_id,
    name: s.name,
    source: s.source,
    location: { ...s.location } as PartnerScreen['location'],
    display: s.display,
    settings: {
      floor_price_cpm: s.floor_price_cpm,
      slot_duration_seconds: s.slot_duration_seconds,
      operating_hours: s.operating_hours ?? null,
      blocked_categories: s.blocked_categories,
      blocked_advertisers: s.blocked_advertisers,
      max_age_rating: s.max_age_rating,
      image_url: s.image_url ?? null,
      timezone: s.timezone,
      auction_enabled: s.auction_enabled
    },
    status: inventory.statusName(status),
    last_heartbeat_at: status.last_heartbeat !== null ? iso(status.last_heartbeat) : null,
    fein: present(inventory.store.fein.get(s.screen_id), s.capabilities.fein, now),
    embed_url: inventory.embedUrl(s),
    created_at: s.created_at,
    updated_at: s.updated_at
  }
}

/** GET /v1/partner/screens, GET and PATCH /v1/partner/screens/:id. A screen of another partner is 404. */
export function partnerScreenRoutes ({ inventory }: Deps): RouteDef[] {
  const common = { tag: 'Partner', envelope: 'nested', auth: 'partner', rateGroup: 'partner' } as const
  const own = (partnerId: string, screenId: string): ScreenRecord => {
    const screen = inventory.store.screens.get(screenId)
    if (screen === undefined || screen.partner_id !== partnerId) throw new ApiError('screen_not_found', `No screen ${screenId} belongs to this partner.`, { param: 'id' })
    return screen
  }
  return [
    route<undefined, PartnerListQuery>({
      ...common,
      method: 'get',
      path: '/v1/partner/screens',
      summary: 'List the partner\'s screens',
      querySchema: 'PartnerListQuery',
      data: 'PartnerScreenList',
      handler: (ctx) => {
        const { screens, next } = partnerScreens(inventory, ctx.principal!.partner!, ctx.q)
        return ok({ screens: screens.map((s) => partnerScreenView(inventory, s, ctx.now)), cursor: { next, has_more: next !== null } })
      }
    }),
    route({
      ...common,
      method: 'get',
      path: '/v1/partner/screens/:id',
      summary: 'One of the partner\'s screens',
      data: 'PartnerScreen',
      errors: ['screen_not_found'],
      handler: (ctx) => ok(partnerScreenView(inventory, own(ctx.principal!.partner!.id, ctx.params.id!), ctx.now))
    }),
    route<ScreenSettingsRequest>({
      ...common,
      method: 'patch',
      path: '/v1/partner/screens/:id',
      summary: 'Change a screen\'s settings: floor CPM, slot duration, operating hours, blocked categories and advertisers',
      description: 'Every change moves updated_at (the adslots since watermark). auction_enabled=false takes the screen out of adslots, the catalog and the auction.',
      body: 'ScreenSettingsRequest',
      data: 'PartnerScreen',
      errors: ['screen_not_found'],
      exclusive: (ctx) => partnerRecord(ctx.principal!.partner!.id),
      handler: (ctx) => {
        const screen = own(ctx.principal!.partner!.id, ctx.params.id!)
        const next = inventory.updateSettings(screen, ctx.body, ctx.now)
        return ok(partnerScreenView(inventory, next, ctx.now))
      }
    })
  ]
}
