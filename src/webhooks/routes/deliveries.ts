import type { Deps } from '../../deps.js'
import type { WebhookDeliveryQuery } from '../../generated/types.js'
import { ok, route, type RouteDef } from '../../http/route.js'
import type { DeliveryRecord } from '../records.js'
import { retrySchedule } from '../kind.js'

/** A delivery as its seat sees it. */
function view ({ seat_id: _seat, ...delivery }: DeliveryRecord): Omit<DeliveryRecord, 'seat_id'> {
  return delivery
}

/** GET /openrtb/v2/webhooks/deliveries: the seat's delivery log (spec, Webhook subscriptions). */
export function deliveryRoutes ({ deliveries }: Deps): RouteDef[] {
  return [
    route<undefined, WebhookDeliveryQuery>({
      tag: 'Webhooks',
      envelope: 'flat',
      auth: 'seat',
      scope: 'campaigns:write',
      rateGroup: 'campaigns',
      method: 'get',
      path: '/openrtb/v2/webhooks/deliveries',
      summary: 'The seat\'s webhook deliveries of the last 7 days, failures included, newest first',
      description: `Every event sent to one of the seat's subscriptions or to its webhook_url, with each attempt (status, time, duration, error). Filters: webhook_id (webhook_url for deliveries to the onboarding webhook_url), event, status, since and until (created, ISO 8601); pages with limit and cursor. Retries come after ${retrySchedule()} (each +-20%), then the delivery is failed.`,
      querySchema: 'WebhookDeliveryQuery',
      data: 'WebhookDeliveryList',
      handler: (ctx) => {
        const page = deliveries.page(ctx.principal!.seat!.seat_id, ctx.q, ctx.now)
        return ok({ deliveries: page.deliveries.map(view), cursor: page.cursor })
      }
    })
  ]
}
