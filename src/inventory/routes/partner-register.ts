import { randomUUID } from 'node:crypto'
import { mintKey, saveKey } from '../../auth/keys.js'
import { iso } from '../../clock.js'
import { ApiError } from '../../errors.js'
import type { AgentRegisterRequest, MintedKey, Partner, PartnerRegisterRequest } from '../../generated/types.js'
import { ok, route, type RouteDef } from '../../http/route.js'
import type { KeyRecord } from '../../auth/records.js'
import type { PartnerRecord } from '../records.js'
import type { Deps } from '../../deps.js'

function minted (key: string | undefined, record: KeyRecord): MintedKey {
  const view: MintedKey = { key_id: record.key_id, key: key ?? '', prefix: record.prefix, scopes: record.scopes, created_at: record.created_at }
  if (record.label !== undefined) view.label = record.label
  return view
}

/** The answer to a partner slug another partner holds (or, on a cluster node, is registering right now). */
function slugTaken (slug: string): ApiError {
  return new ApiError('already_exists', `The slug ${slug} is taken.`, { param: 'slug' })
}

/** The partner's public view. */
export function partnerView (p: PartnerRecord): Partner {
  const view: Partner = { id: p.id, name: p.name, slug: p.slug, partner_type: p.partner_type, seller_id: p.seller_id, source: p.source, created_at: p.created_at }
  if (p.domain !== undefined) view.domain = p.domain
  return view
}

/**
 * POST /v1/partner/register and POST /v1/partner/agent/register: the two ways to mint a platform key (spec,
 * Authentication 2). Both are open, so both are limited per client address with failures counted.
 */

export function partnerRegistrationRoutes ({ store, outbox, inventory }: Deps): RouteDef[] {
  return [
    route<PartnerRegisterRequest>({
      method: 'post',
      path: '/v1/partner/register',
      summary: 'Register a screen-operator partner and mint its platform key',
      description: 'The key in data.api_key.key is shown once. slug is unique (409 ALREADY_EXISTS). The partner appears in sellers.json under seller_id = slug. Limited to 10 requests per hour per client address, failures included.',
      tag: 'Partner',
      envelope: 'nested',
      auth: 'none',
      rateGroup: 'partner_registration',
      body: 'PartnerRegisterRequest',
      data: 'PartnerRegistration',
      status: 201,
      errors: ['already_exists', 'invalid_email'],
      unique: (ctx) => ({ name: `partner_slug:${ctx.body.slug}`, taken: () => slugTaken(ctx.body.slug) }),
      handler: (ctx) => {
        const body = ctx.body
        if (store.partnerSlugs.get(body.slug) !== undefined) throw slugTaken(body.slug)
        const now = iso(ctx.now)
        const partner: PartnerRecord = { id: randomUUID(), name: body.name, slug: body.slug, partner_type: body.partner_type, contact_email: body.contact_email, seller_id: body.slug, source: body.partner_type === 'reseller' ? 'partner' : 'owned', created_at: now }
        if (body.domain !== undefined) partner.domain = body.domain
        const { key, record } = mintKey('platform', [], now, { partner_id: partner.id, label: `partner ${body.slug}` })
        inventory.addPartner(partner)
        if (ctx.dryRun) ctx.warn('Dry run: no key was minted.')
        else saveKey(store, record)
        outbox.append('partner.registered', `partner:${partner.id}`, { partner_id: partner.id, slug: partner.slug, partner_type: partner.partner_type })
        return ok({ partner: partnerView(partner), api_key: minted(ctx.dryRun ? undefined : key, record) }, 201)
      }
    }),
    route<AgentRegisterRequest>({
      method: 'post',
      path: '/v1/partner/agent/register',
      summary: 'Mint a platform key headlessly (for automated buyers)',
      description: 'Returns a platform key once. Then call POST /openrtb/v2/onboard with it as Bearer: the key is linked to the new seat and gains the DSP scopes, with no second credential. Limited to 10 requests per hour per client address, failures included.',
      tag: 'Partner',
      envelope: 'nested',
      auth: 'none',
      rateGroup: 'partner_registration',
      body: 'AgentRegisterRequest',
      data: 'AgentRegistration',
      status: 201,
      errors: ['invalid_email'],
      handler: (ctx) => {
        const now = iso(ctx.now)
        const { key, record } = mintKey('platform', ctx.body.scopes ?? [], now, { label: ctx.body.name })
        if (ctx.dryRun) ctx.warn('Dry run: no key was minted.')
        else saveKey(store, record)
        outbox.append('key.created', `key:${record.key_id}`, { key_id: record.key_id, prefix: record.prefix, agent: ctx.body.name })
        return ok({ api_key: minted(ctx.dryRun ? undefined : key, record), next: 'POST /openrtb/v2/onboard with Authorization: Bearer <this key> to link it to a new seat.' }, 201)
      }
    })
  ]
}
