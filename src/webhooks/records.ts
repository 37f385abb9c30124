// Webhooks' storage shapes: subscriptions (with their secrets), their health and the delivery log. A leaf.
import type { Webhook, WebhookDelivery } from '../generated/types.js'

/** A webhook subscription: the wire view plus its owner and its secret, sealed (never stored in the clear). */
export interface WebhookRecord extends Webhook {
  seat_id: string
  secret_sealed: string
}

/**
 * A subscription's health as its deliveries leave it, in a row of its own (webhook_health): on a cluster the node
 * that delivers writes it, and rewriting the subscription's row for it would bring back a subscription another node
 * had just removed. Read over the subscription's own fields (subscriptionOf), which hold a subscription's health as
 * created, and as earlier versions kept it.
 */
export type WebhookHealth = Pick<Webhook, 'status' | 'last_success_at' | 'failing_since' | 'disabled_at' | 'disabled_reason'>

/** A webhook delivery as the log keeps it for 7 days: the wire view plus its owner. */
export interface DeliveryRecord extends WebhookDelivery {
  seat_id: string
}
