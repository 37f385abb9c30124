import { randomBytes } from 'node:crypto'
import { iso } from '../../clock.js'
import type { Deps } from '../../deps.js'
import { ApiError } from '../../errors.js'
import type { Webhook, WebhookCreateRequest } from '../../generated/types.js'
import { schemas } from '../../generated/schemas.js'
import { ok, route, type RouteDef } from '../../http/route.js'
import { callbackUrlProblem } from '../../net/url-guard.js'
import type { WebhookRecord } from '../records.js'
import { cancelQueued, forgetHealth } from '../health.js'
import { seatWebhooks, subscriptionOf } from '../recipients.js'
import { indexForSeat, unindexForSeat } from '../../accounts/seat-lists.js'

/** Active subscriptions a seat may have (spec, Webhook subscriptions). */
const MAX_ACTIVE = 10
const EVENTS: ReadonlySet<string> = new Set(schemas.WebhookEventType.enum)

/** A subscription as its seat sees it: never the secret. */
function view ({ seat_id: _seat, secret_sealed: _secret, ...webhook }: WebhookRecord): Webhook {
  return webhook
}

/** Webhook subscriptions (spec, Webhook subscriptions): create with a secret shown once, list, delete. */
export function webhookRoutes ({ store, config, sealer, notices, deliveries }: Deps): RouteDef[] {
  const common = { tag: 'Webhooks', envelope: 'flat', auth: 'seat', scope: 'campaigns:write', rateGroup: 'campaigns' } as const
  return [
    route<WebhookCreateRequest>({
      ...common,
      method: 'post',
      path: '/openrtb/v2/webhooks',
      summary: 'Subscribe an https endpoint to events; the signing secret is returned once',
      description: `url: https on a public host; localhost names and loopback, private, link-local, CGNAT, multicast and other reserved IPv4 and IPv6 ranges, in any spelling (decimal, hex, IPv4-mapped), are 400 invalid_webhook_url, and names are checked again against the addresses they resolve to when delivering. events: any of ${[...EVENTS].join(', ')} (others: 400 invalid_events). At most ${MAX_ACTIVE} active subscriptions per seat (409 webhook_limit_reached). The secret (whsec_...) keys the HMAC-SHA256 of X-Service-Signature; it is stored sealed and never shown again.`,
      body: 'WebhookCreateRequest',
      data: 'WebhookCreated',
      status: 201,
      errors: ['invalid_webhook_url', 'invalid_events', 'webhook_limit_reached'],
      // The count of active subscriptions is read and then raised: one at a time per seat on a cluster.
      exclusive: (ctx) => `webhooks:${ctx.principal!.seat!.seat_id.toLowerCase()}`,
      handler: (ctx) => {
        const seat = ctx.principal!.seat!
        const problem = callbackUrlProblem(ctx.body.url, config.allowPrivateCallbackUrls)
        if (problem !== undefined) throw new ApiError('invalid_webhook_url', `url ${problem}.`, { param: 'url' })
        const unknown = ctx.body.events.filter((e) => !EVENTS.has(e))
        if (unknown.length > 0) throw new ApiError('invalid_events', `Unknown event types: ${unknown.join(', ')}. Known: ${[...EVENTS].join(', ')}.`, { param: 'events' })
        if (seatWebhooks(store, seat.seat_id).filter((w) => w.status === 'active').length >= MAX_ACTIVE) throw new ApiError('webhook_limit_reached', `A seat has at most ${MAX_ACTIVE} active webhooks; delete one first.`)
        const id = `whk_${randomBytes(12).toString('hex')}`
        const secret = `whsec_${randomBytes(32).toString('base64url')}`
        const record: WebhookRecord = {
          webhook_id: id,
          url: ctx.body.url,
          events: [...new Set(ctx.body.events)] as Webhook['events'],
          status: 'active',
          description: ctx.body.description ?? null,
          created_at: iso(ctx.now),
          disabled_at: null,
          disabled_reason: null,
          last_success_at: null,
          failing_since: null,
          seat_id: seat.seat_id,
          secret_sealed: sealer.seal(id, secret)
        }
        store.webhooks.putSync(id, record)
        indexForSeat(store, 'webhook', seat.seat_id, ctx.now, id)
        return ok({ webhook: view(record), ...(ctx.dryRun ? {} : { secret }) }, 201)
      }
    }),
    route({
      ...common,
      method: 'get',
      path: '/openrtb/v2/webhooks',
      summary: 'The seat\'s webhook subscriptions, newest first, without secrets',
      data: 'WebhookList',
      handler: (ctx) => ok({ webhooks: seatWebhooks(store, ctx.principal!.seat!.seat_id).map(view) })
    }),
    route({
      ...common,
      method: 'delete',
      path: '/openrtb/v2/webhooks/:id',
      summary: 'Removes a subscription: nothing more is delivered to it',
      description: 'Deliveries still queued for it are canceled (GET /webhooks/deliveries shows them canceled); an attempt already under way finishes.',
      data: 'Webhook',
      errors: ['webhook_not_found'],
      handler: (ctx) => {
        const w = subscriptionOf(store, ctx.params.id!)
        if (w === undefined || w.seat_id.toLowerCase() !== ctx.principal!.seat!.seat_id.toLowerCase()) throw new ApiError('webhook_not_found', `No webhook ${ctx.params.id} belongs to this seat.`, { param: 'id' })
        store.webhooks.removeSync(w.webhook_id)
        forgetHealth(store, w.webhook_id)
        cancelQueued(notices, deliveries, w, 'the subscription was deleted')
        unindexForSeat(store, 'webhook', w.seat_id, Date.parse(w.created_at), w.webhook_id)
        return ok(view(w))
      }
    })
  ]
}
