import { randomBytes } from 'node:crypto'
import { iso } from '../clock.js'
import type { Deps } from '../deps.js'
import { ApiError } from '../errors.js'
import type { BidderAlias, BidderAliasRequest } from '../generated/types.js'
import { ok, route, type RouteDef } from '../http/route.js'
import { cidrProblem, removeAlias, saveAlias } from '../exchange/aliases.js'
import type { BidderAliasRecord } from '../exchange/records.js'

const ALIAS = /^[a-z0-9][a-z0-9_-]{1,63}$/

/** The record a cluster node locks (RouteDef.exclusive) to rewrite an alias: replacing one keeps its secret. */
function aliasRecord (alias: string): string {
  return `alias:${alias}`
}

/**
 * The operator API for exchanges' bidder aliases (DESIGN principle 8: alias configuration goes through the operator
 * API, audited): the allowlist, signature requirement, rate limit, tmax default, notice URLs and seats of each.
 */
export function adminBidderAliasRoutes ({ store, outbox, config, sealer }: Deps): RouteDef[] {
  const common = { tag: 'Operator', envelope: 'flat', auth: 'admin', rateGroup: 'ops' } as const
  const view = (r: BidderAliasRecord, secret?: string): BidderAlias => {
    const v: BidderAlias = { alias: r.alias, name: r.name, status: r.status, endpoint: `${config.baseUrl}/openrtb/bidder/${r.alias}/bid`, ip_allowlist: r.ip_allowlist, require_signature: r.require_signature, rate_limit_per_minute: r.rate_limit_per_minute, default_tmax_ms: r.default_tmax_ms, notices: r.notices, created_at: r.created_at, updated_at: r.updated_at }
    if (r.seats !== undefined) v.seats = r.seats
    if (secret !== undefined) v.signing_secret = secret
    return v
  }
  const load = (alias: string): BidderAliasRecord => {
    const r = store.aliases.get(alias)
    if (r === undefined) throw new ApiError('alias_not_found', `No bidder alias ${alias}.`, { param: 'alias' })
    return r
  }
  const mintSecret = (alias: string) => {
    const secret = `xsec_${randomBytes(32).toString('base64url')}`
    return { secret, sealed: sealer.seal(`alias:${alias}`, secret) }
  }
  return [
    route<BidderAliasRequest>({
      ...common,
      method: 'put',
      path: '/admin/v1/bidder-aliases/:alias',
      exclusive: (ctx) => aliasRecord(ctx.params.alias!),
      summary: 'Create or replace an exchange\'s bidder alias',
      body: 'BidderAliasRequest',
      data: 'BidderAlias',
      status: 201,
      errors: ['seat_not_found'],
      handler: (ctx) => {
        const alias = ctx.params.alias!
        if (!ALIAS.test(alias)) throw new ApiError('invalid_parameter', 'alias must be 2-64 characters of a-z, 0-9, _ and -, starting with a letter or digit.', { param: 'alias' })
        const b = ctx.body
        b.ip_allowlist.forEach((entry, i) => {
          const problem = cidrProblem(entry)
          if (problem !== undefined) throw new ApiError('invalid_parameter', `${problem}.`, { param: `ip_allowlist.${i}` })
        })
        b.seats?.forEach((seat, i) => {
          if (store.seats.get(seat.toLowerCase()) === undefined) throw new ApiError('seat_not_found', `No seat ${seat}.`, { param: `seats.${i}` })
        })
        const existing = store.aliases.get(alias)
        const now = iso(ctx.now)
        const record: BidderAliasRecord = {
          alias,
          name: b.name,
          status: b.status ?? 'active',
          ip_allowlist: b.ip_allowlist,
          require_signature: b.require_signature ?? false,
          rate_limit_per_minute: b.rate_limit_per_minute ?? 60_000,
          default_tmax_ms: b.default_tmax_ms ?? 200,
          notices: { win: b.notices?.win ?? true, loss: b.notices?.loss ?? true, billing: b.notices?.billing ?? true },
          created_at: existing?.created_at ?? now,
          updated_at: now
        }
        if (b.seats !== undefined) record.seats = b.seats
        let secret: string | undefined
        if (existing?.secret_sealed !== undefined) {
          record.secret_sealed = existing.secret_sealed
        } else {
          const minted = mintSecret(alias)
          secret = minted.secret
          record.secret_sealed = minted.sealed
        }
        saveAlias(store, record)
        outbox.append(`audit.bidder_alias.${existing === undefined ? 'created' : 'updated'}`, `bidder_alias:${alias}`, { actor: 'operator', alias, ip_allowlist: record.ip_allowlist, require_signature: record.require_signature, rate_limit_per_minute: record.rate_limit_per_minute, status: record.status })
        return ok(view(record, ctx.dryRun ? undefined : secret), existing === undefined ? 201 : 200)
      }
    }),
    route({
      ...common,
      method: 'get',
      path: '/admin/v1/bidder-aliases',
      summary: 'List the exchanges\' bidder aliases',
      data: 'BidderAliasList',
      handler: () => ok({ aliases: [...store.aliases.getRange()].map(({ value }) => view(value)) })
    }),
    route({
      ...common,
      method: 'get',
      path: '/admin/v1/bidder-aliases/:alias',
      summary: 'One bidder alias (never its secret)',
      data: 'BidderAlias',
      errors: ['alias_not_found'],
      handler: (ctx) => ok(view(load(ctx.params.alias!)))
    }),
    route({
      ...common,
      method: 'post',
      path: '/admin/v1/bidder-aliases/:alias/rotate-secret',
      exclusive: (ctx) => aliasRecord(ctx.params.alias!),
      summary: 'Replace an alias\'s signing secret',
      description: 'The new signing_secret is in this answer only; the old one stops verifying at once. Audited as audit.bidder_alias.secret_rotated.',
      data: 'BidderAlias',
      errors: ['alias_not_found'],
      handler: (ctx) => {
        const r = load(ctx.params.alias!)
        const minted = mintSecret(r.alias)
        const next: BidderAliasRecord = { ...r, secret_sealed: minted.sealed, updated_at: iso(ctx.now) }
        saveAlias(store, next)
        outbox.append('audit.bidder_alias.secret_rotated', `bidder_alias:${r.alias}`, { actor: 'operator', alias: r.alias })
        return ok(view(next, ctx.dryRun ? undefined : minted.secret))
      }
    }),
    route({
      ...common,
      method: 'delete',
      path: '/admin/v1/bidder-aliases/:alias',
      exclusive: (ctx) => aliasRecord(ctx.params.alias!),
      summary: 'Remove a bidder alias',
      description: 'Its endpoint and notice URLs answer 404 alias_not_found from then on; budget held by its pending bids is released by the expiry job an hour after each bid. Audited as audit.bidder_alias.deleted.',
      data: 'BidderAlias',
      errors: ['alias_not_found'],
      handler: (ctx) => {
        const r = load(ctx.params.alias!)
        removeAlias(store, r.alias)
        outbox.append('audit.bidder_alias.deleted', `bidder_alias:${r.alias}`, { actor: 'operator', alias: r.alias })
        return ok(view(r))
      }
    })
  ]
}
