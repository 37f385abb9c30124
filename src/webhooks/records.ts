// Webhooks' storage shapes: subscriptions (with their secrets), their health and the delivery log, and the tables
// that hold them.
import type { Webhook, WebhookDelivery } from '../generated/types.js'
import { table } from '../store/table.js'

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

/** The webhooks domain's tables (src/store/tables.ts). */
export const webhookTables = {
  /** webhook_id -> a webhook subscription (listed per seat through bySeat, kind 'webhook'). */
  webhooks: table<WebhookRecord>({ name: 'webhooks', replication: 'quorum', owners: ['src/webhooks/'] }),
  /** webhook_id -> the subscription's health as its deliveries left it (src/webhooks/health.ts). */
  webhookHealth: table<WebhookHealth>({ name: 'webhook_health', replication: 'quorum', owners: ['src/webhooks/'] }),
  /** [seat_id lower-cased, -created ms, delivery_id] -> a webhook delivery and its attempts, newest first, 7 days. */
  deliveries: table<DeliveryRecord, [string, number, string]>({ name: 'webhook_deliveries', ordered: true, shapes: true, replication: 'quorum', owners: ['src/webhooks/'] })
}
