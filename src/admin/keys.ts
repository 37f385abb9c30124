import { iso } from '../clock.js'
import { revokeKey, updateKey } from '../auth/keys.js'
import { ApiError } from '../errors.js'
import type { KeyUpdateRequest, SeatActionRequest } from '../generated/types.js'
import { ok, route, type RouteDef } from '../http/route.js'
import type { KeyRecord } from '../auth/records.js'
import { keyView } from '../accounts/views.js'
import type { Deps } from '../deps.js'

/** Operator routes over API keys: read, narrow or widen scopes, revoke; each audited. */
export function adminKeyRoutes ({ store, outbox }: Deps): RouteDef[] {
  const load = (keyId: string): KeyRecord => {
    const key = store.keys.get(keyId)
    if (key === undefined) throw new ApiError('key_not_found', `No key ${keyId}.`, { param: 'key_id' })
    return key
  }
  const audited = (key: KeyRecord, type: string, data: Record<string, unknown>) => {
    outbox.append(type, `key:${key.key_id}`, { actor: 'operator', ...data }, key.seat_id)
    return ok(keyView(key))
  }
  const common = { tag: 'Operator', envelope: 'flat', auth: 'admin', rateGroup: 'ops', data: 'KeySummary', errors: ['key_not_found'] } as const
  return [
    route({ ...common, method: 'get', path: '/admin/v1/keys/:key_id', summary: 'Read an API key (prefix only)', handler: (ctx) => ok(keyView(load(ctx.params.key_id!))) }),
    route<KeyUpdateRequest>({
      ...common,
      method: 'patch',
      path: '/admin/v1/keys/:key_id',
      summary: 'Replace a key\'s scopes',
      description: 'Audited as audit.key.scopes_changed. Keys of sandbox seats still pass every scope check.',
      body: 'KeyUpdateRequest',
      handler: (ctx) => {
        const key = load(ctx.params.key_id!)
        const next = updateKey(store, key, { scopes: ctx.body.scopes })
        return audited(next, 'audit.key.scopes_changed', { before: key.scopes, after: next.scopes, reason: ctx.body.reason ?? null })
      }
    }),
    route<SeatActionRequest>({
      ...common,
      method: 'post',
      path: '/admin/v1/keys/:key_id/revoke',
      summary: 'Revoke an API key',
      description: 'The key answers 401 from then on. Revoking a revoked key changes nothing. Audited as audit.key.revoked.',
      body: 'SeatActionRequest',
      handler: (ctx) => {
        const key = load(ctx.params.key_id!)
        if (key.revoked_at !== null) return ok(keyView(key))
        return audited(revokeKey(store, key, iso(ctx.now)), 'audit.key.revoked', { reason: ctx.body.reason ?? null })
      }
    })
  ]
}
