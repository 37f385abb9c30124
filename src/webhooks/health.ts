import { iso } from '../clock.js'
import { originOf, type Notices } from '../notify/notices.js'
import type { Attempt } from '../notify/sender.js'
import type { NoticeRecord } from '../notify/records.js'
import type { WebhookHealth } from './records.js'
import { subscriptionOf } from './recipients.js'
import type { Outbox } from '../store/outbox.js'
import type { Store } from '../store/store.js'
import type { DeliveryLog } from './delivery-log.js'

/**
 * Cancels every queued delivery to a subscription (deleted or disabled): nothing more is sent to it. Reads the queue
 * of the subscription's receiver only. Call inside Store.write.
 */
export function cancelQueued (notices: Notices, log: DeliveryLog, webhook: { webhook_id: string, url: string }, reason: string): number {
  let canceled = 0
  for (const { key, notice } of notices.queued(originOf(webhook.url))) {
    if (notice.kind !== 'webhook' || notice.webhook_id !== webhook.webhook_id) continue
    notices.remove(key)
    log.canceled(notice, reason)
    canceled++
  }
  return canceled
}

function span (ms: number): string {
  const h = Math.round(ms / 3_600_000)
  return h >= 48 ? `${Math.round(h / 24)} days` : `${h} hours`
}

/**
 * Keeps a subscription's health from each attempt (inside the transaction that records it): last_success_at on a
 * success, failing_since from the first failure after one. The disable rule: a delivery that runs out of retries while
 * the subscription has had no success since that delivery was created means the endpoint failed for the whole
 * schedule (about 2.6 days); the subscription is disabled, its queued deliveries canceled, and webhook.disabled goes
 * to the seat's webhook_url.
 */
export function recordHealth ({ store, notices, outbox, log }: { store: Store, notices: Notices, outbox: Outbox, log: DeliveryLog }, notice: NoticeRecord, attempt: Attempt): void {
  if (notice.webhook_id === undefined || attempt.result === 'canceled') return
  const w = subscriptionOf(store, notice.webhook_id)
  if (w === undefined || w.status !== 'active') return
  const at = iso(attempt.at)
  const health: WebhookHealth = { status: w.status, last_success_at: w.last_success_at, failing_since: w.failing_since, disabled_at: w.disabled_at, disabled_reason: w.disabled_reason }
  if (attempt.result === 'delivered') {
    store.webhookHealth.putSync(w.webhook_id, { ...health, last_success_at: at, failing_since: null })
    return
  }
  const failing: WebhookHealth = { ...health, failing_since: w.failing_since ?? at }
  const succeededSince = w.last_success_at !== null && Date.parse(w.last_success_at) >= notice.created_at
  if (attempt.result === 'dropped' && !succeededSince) {
    const reason = `No delivery succeeded for ${span(attempt.at - Date.parse(failing.failing_since!))}: ${notice.id} (${notice.event}) failed all ${notice.attempts + 1} attempts, the last with ${attempt.reason ?? 'an error'}.`
    store.webhookHealth.putSync(w.webhook_id, { ...failing, status: 'disabled', disabled_at: at, disabled_reason: reason })
    cancelQueued(notices, log, w, 'the subscription was disabled')
    outbox.append('webhook.disabled', `webhook:${w.webhook_id}`, { webhook_id: w.webhook_id, url: w.url, disabled_at: at, reason, delivery_id: notice.id }, w.seat_id)
    return
  }
  if (w.failing_since === null) store.webhookHealth.putSync(w.webhook_id, failing)
}

/** Drops a removed subscription's health. Call inside Store.write. */
export function forgetHealth (store: Store, webhookId: string): void {
  store.webhookHealth.removeSync(webhookId)
}
