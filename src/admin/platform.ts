import type { Deps } from '../deps.js'
import { ApiError } from '../errors.js'
import type { PartnerSourceRequest, PlatformSettings } from '../generated/types.js'
import { ok, route, type RouteDef } from '../http/route.js'
import { partnerView } from '../inventory/routes/partner-register.js'
import { partnerRecord } from '../inventory/inventory.js'
import { putSetting, setting } from '../store/settings.js'

/** Operator switches and partner inventory classification, audited. */
export function adminPlatformRoutes ({ store, outbox, inventory }: Deps): RouteDef[] {
  const common = { tag: 'Operator', envelope: 'flat', auth: 'admin', rateGroup: 'ops' } as const
  const settings = (): PlatformSettings => ({ partner_display: inventory.sourcesEnabled().includes('partner'), house_creative_id: setting(store, 'house_creative_id') ?? null })
  return [
    route({ ...common, method: 'get', path: '/admin/v1/settings', summary: 'Read the operator switches', data: 'PlatformSettings', handler: () => ok(settings()) }),
    route<PlatformSettings>({
      ...common,
      method: 'put',
      path: '/admin/v1/settings',
      summary: 'Change the operator switches',
      body: 'PlatformSettings',
      data: 'PlatformSettings',
      errors: ['creative_not_found', 'validation_failed'],
      // The audit's before and after are the switches as this change found them, on whichever node it runs.
      exclusive: () => 'settings',
      handler: (ctx) => {
        const before = settings()
        if (ctx.body.partner_display !== undefined) putSetting(store, 'partner_display', ctx.body.partner_display)
        const house = ctx.body.house_creative_id
        if (house === null) putSetting(store, 'house_creative_id', undefined)
        if (typeof house === 'string') {
          const creative = store.creatives.get(house)
          if (creative === undefined) throw new ApiError('creative_not_found', `No creative ${house}.`, { param: 'house_creative_id' })
          if (creative.status !== 'approved') throw new ApiError('validation_failed', `Creative ${house} is ${creative.status}; the house creative must be approved.`, { param: 'house_creative_id' })
          putSetting(store, 'house_creative_id', house)
        }
        const after = { ...before, ...ctx.body }
        outbox.append('audit.settings.changed', 'settings', { actor: 'operator', before, after })
        return ok(after)
      }
    }),
    route({
      ...common,
      method: 'get',
      path: '/admin/v1/partners',
      summary: 'List partners',
      handler: () => ok({ partners: [...store.partners.getRange()].map(({ value }) => partnerView(value)) })
    }),
    route<PartnerSourceRequest>({
      ...common,
      method: 'put',
      path: '/admin/v1/partners/:id/source',
      summary: 'Classify a partner\'s screens as owned or partner (resold) inventory',
      description: 'Moves every screen of the partner to that source at once. Audited as audit.partner.source_changed.',
      body: 'PartnerSourceRequest',
      data: 'Partner',
      errors: ['partner_not_found'],
      exclusive: (ctx) => partnerRecord(ctx.params.id!),
      handler: (ctx) => {
        const partner = store.partners.get(ctx.params.id!)
        if (partner === undefined) throw new ApiError('partner_not_found', `No partner ${ctx.params.id}.`, { param: 'id' })
        const { partner: next, moved } = inventory.setPartnerSource(partner, ctx.body.source, ctx.now)
        outbox.append('audit.partner.source_changed', `partner:${partner.id}`, { actor: 'operator', from: partner.source, to: ctx.body.source, screens_moved: moved, reason: ctx.body.reason ?? null })
        return ok(partnerView(next))
      }
    })
  ]
}
