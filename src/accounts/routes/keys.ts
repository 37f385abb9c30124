import { mintKey, revokeKey, saveKey, seatKeyIds } from '../../auth/keys.js'
import { iso } from '../../clock.js'
import { ApiError } from '../../errors.js'
import type { KeyCreateRequest, Scope } from '../../generated/types.js'
import { ok, route, type RouteDef } from '../../http/route.js'
import type { Deps } from '../../deps.js'
import { keyView } from '../views.js'
import { seatRecord } from '../seats.js'

/**
 * Scopes of a key that the calling key does not hold itself. A key manages only keys it could have been: it mints
 * keys within its own scopes and revokes only keys whose scopes are within its own, in sandbox too (sandbox passes
 * route scope checks, never a grant), so a narrowed or leaked key can neither widen itself nor lock out a wider one.
 */
function beyondCaller (caller: readonly Scope[], scopes: readonly Scope[]): Scope[] {
  return scopes.filter((s) => !caller.includes(s))
}

/**
 * Self-service key rotation for a seat (the spec leaves rotation unnamed): mint a second key, deploy it, revoke the
 * old one. A seat always keeps one live key, so it cannot lock itself out. The spec names no scope for keys; they
 * are governed by campaigns:write, the scope of the seat's other account configuration (webhooks).
 */
export function keyRoutes ({ store, outbox, sealer }: Deps): RouteDef[] {
  const liveKeys = (seatKeyIds: string[], now: number) => seatKeyIds
    .map((id) => store.keys.get(id))
    .filter((k) => k !== undefined && k.revoked_at === null && (k.expires_at === undefined || Date.parse(k.expires_at) > now))

  return [
    route<KeyCreateRequest>({
      method: 'post',
      path: '/openrtb/v2/keys',
      summary: 'Mint another API key for the seat (rotation)',
      description: 'The key is returned once. scopes default to the calling key\'s and may only narrow them, in sandbox too (403 missing_scope names the first scope the calling key lacks).',
      tag: 'Accounts',
      envelope: 'flat',
      auth: 'seat',
      scope: 'campaigns:write',
      rateGroup: 'account',
      body: 'KeyCreateRequest',
      data: 'MintedKey',
      status: 201,
      errors: ['missing_scope', 'invalid_date'],
      handler: (ctx) => {
        const { seat, key: caller } = ctx.principal!
        const scopes = ctx.body.scopes ?? caller.scopes
        const beyond = beyondCaller(caller.scopes, scopes)
        if (beyond.length > 0) throw new ApiError('missing_scope', `The calling key cannot grant ${beyond.join(', ')}.`, { required_scope: beyond[0]!, granted_scopes: caller.scopes })
        if (ctx.body.expires_at !== undefined && Date.parse(ctx.body.expires_at) <= ctx.now) {
          throw new ApiError('invalid_date', 'expires_at must be in the future.', { param: 'expires_at' })
        }
        const now = iso(ctx.now)
        const extra: Parameters<typeof mintKey>[3] = { seat_id: seat!.seat_id }
        if (ctx.body.label !== undefined) extra.label = ctx.body.label
        if (ctx.body.expires_at !== undefined) extra.expires_at = new Date(ctx.body.expires_at).toISOString()
        const { key, record } = mintKey('platform', scopes, now, extra)
        if (ctx.dryRun) {
          ctx.warn('Dry run: no key was minted.')
        } else {
          // Sealed so that it can sign the seat's notifications and webhook_url events.
          record.sealed = sealer.seal(record.key_id, key)
          saveKey(store, record)
          outbox.append('key.created', `key:${record.key_id}`, { key_id: record.key_id, prefix: record.prefix, scopes }, seat!.seat_id)
        }
        const data: Record<string, unknown> = { key_id: record.key_id, key: ctx.dryRun ? undefined : key, prefix: record.prefix, scopes, created_at: now }
        if (record.label !== undefined) data.label = record.label
        if (record.expires_at !== undefined) data.expires_at = record.expires_at
        return ok(data, 201)
      }
    }),
    route({
      method: 'get',
      path: '/openrtb/v2/keys',
      summary: 'List the seat\'s API keys (prefixes only)',
      tag: 'Accounts',
      envelope: 'flat',
      auth: 'seat',
      scope: 'campaigns:write',
      rateGroup: 'account',
      data: 'KeyList',
      handler: (ctx) => {
        const keys = seatKeyIds(store, ctx.principal!.seat!.seat_id).map((id) => store.keys.get(id)).filter((k) => k !== undefined)
        return ok({ keys: keys.map(keyView) })
      }
    }),
    route({
      method: 'delete',
      path: '/openrtb/v2/keys/:key_id',
      summary: 'Revoke one of the seat\'s API keys',
      description: 'Takes effect at once on this node and within a second on others. A key of another seat answers 404 not_found. A key holding a scope the calling key lacks answers 403 missing_scope, in sandbox too. The last live key cannot be revoked (409 invalid_transition).',
      tag: 'Accounts',
      envelope: 'flat',
      auth: 'seat',
      scope: 'campaigns:write',
      rateGroup: 'account',
      data: 'KeySummary',
      errors: ['not_found', 'invalid_transition', 'missing_scope'],
      exclusive: (ctx) => seatRecord(ctx.principal!.seat!.seat_id),
      handler: (ctx) => {
        const seat = ctx.principal!.seat!
        const target = store.keys.get(ctx.params.key_id!)
        if (target === undefined || target.seat_id?.toLowerCase() !== seat.seat_id.toLowerCase()) throw new ApiError('not_found', 'No key with that key_id belongs to this seat.', { param: 'key_id' })
        const caller = ctx.principal!.key
        const beyond = beyondCaller(caller.scopes, target.scopes)
        if (beyond.length > 0) throw new ApiError('missing_scope', `That key holds ${beyond.join(', ')}, which the calling key lacks; revoke it with a key that holds every scope it has.`, { required_scope: beyond[0]!, granted_scopes: caller.scopes })
        if (target.revoked_at !== null) return ok(keyView(target))
        if (liveKeys(seatKeyIds(store, seat.seat_id), ctx.now).length <= 1) throw new ApiError('invalid_transition', 'This is the seat\'s last live key; mint a new one before revoking it.')
        const revoked = revokeKey(store, target, iso(ctx.now))
        outbox.append('key.revoked', `key:${target.key_id}`, { key_id: target.key_id, prefix: target.prefix }, seat.seat_id)
        return ok(keyView(revoked))
      }
    })
  ]
}
