// Webhooks' storage shapes: subscriptions (with their secrets) and the delivery log. A leaf.
import type { Webhook, WebhookDelivery } from '../generated/types.js'

/** A webhook subscription: the wire view plus its owner and its secret, sealed (never stored in the clear). */
export interface WebhookRecord extends Webhook {
  seat_id: string
  secret_sealed: string
}

/** A webhook delivery as the log keeps it for 7 days: the wire view plus its owner. */
export interface DeliveryRecord extends WebhookDelivery {
  seat_id: string
}
