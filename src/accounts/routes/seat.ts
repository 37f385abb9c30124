import type { RateGroup } from '../../generated/types.js'
import { limitFor, RATE_GROUPS } from '../../http/rate-limit.js'
import { ok, route, type RouteDef } from '../../http/route.js'
import type { Deps } from '../../deps.js'
import { registrationView } from '../views.js'

/** GET /openrtb/v2/seat: key introspection, so a buyer can see its seat, scopes and limits without guessing. */
export function seatRoute (_deps: Deps): RouteDef {
  return route({
    method: 'get',
    path: '/openrtb/v2/seat',
    summary: 'Who am I: the calling key, its seat and its rate limits',
    description: 'Designed by oohbid. Any key linked to a seat may call it; no scope is needed.',
    tag: 'Accounts',
    envelope: 'flat',
    auth: 'seat',
    rateGroup: 'account',
    data: 'SeatContext',
    handler: (ctx) => {
      const { seat, key } = ctx.principal!
      const groups = (Object.keys(RATE_GROUPS) as RateGroup[]).filter((g) => RATE_GROUPS[g].per === 'key' && g !== 'partner')
      return ok({
        seat: registrationView(seat!),
        key: { key_id: key.key_id, prefix: key.prefix, kind: key.kind, scopes: key.scopes, created_at: key.created_at },
        rate_limits: groups.map((group) => {
          const { limit, windowMs, custom } = limitFor(group, ctx.principal)
          return { group, limit, window_seconds: windowMs / 1000, custom }
        })
      })
    }
  })
}
