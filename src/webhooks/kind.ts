import type { KeySealer } from '../auth/sealed-keys.js'
import { iso } from '../clock.js'
import type { Notices } from '../notify/notices.js'
import { seatSigningKey } from '../notify/seat-key.js'
import type { NoticeRecord } from '../notify/records.js'
import type { NoticeKind } from '../notify/sender.js'
import type { Outbox } from '../store/outbox.js'
import type { Store } from '../store/store.js'
import type { DeliveryLog } from './delivery-log.js'
import { recordHealth } from './health.js'
import { subscriptionOf } from './recipients.js'
import { webhookSignature } from './signature.js'

/**
 * Seconds before each retry: 10 s x 4^n, capped at a day, with +-20% jitter. Ten attempts over about 2.6 days; a
 * receiver down for a deploy or an afternoon loses nothing.
 */
export const WEBHOOK_RETRIES = [10, 40, 160, 640, 2560, 10240, 40960, 86400, 86400]

/** The retry schedule in words, for the documents that state it. */
export function retrySchedule (): string {
  return WEBHOOK_RETRIES.map((s) => s < 60 ? `${s} s` : s < 3600 ? `${Math.round(s / 60)} min` : `${Math.round(s / 3600)} h`).join(', ')
}

/** What every signed webhook POST shares: https only, the webhook retry schedule, any 2xx acknowledges. */
export const SIGNED_POST = {
  method: 'POST',
  schemes: ['https:'],
  retries: WEBHOOK_RETRIES,
  jitter: 0.2,
  delivered: (status: number) => status >= 200 && status < 300,
  finalOn4xx: false
} as const

/**
 * One attempt of a signed POST: the service's headers (event, delivery id, attempt, timestamp) and X-Service-Signature
 * with `secret` over the body `bodyAt` makes for the attempt's time (a webhook's envelope carries it).
 */
export function signedAttempt (notice: NoticeRecord, nowMs: number, secret: string, bodyAt: (t: number) => string, extra: Record<string, string>): { headers: Record<string, string>, body: string } {
  const t = Math.floor(nowMs / 1000)
  const body = bodyAt(t)
  const headers: Record<string, string> = {
    'user-agent': 'oohbid-webhooks/1.0',
    'content-type': 'application/json',
    'x-service-event': notice.event!,
    'x-service-delivery-id': notice.id,
    'x-service-attempt': String(notice.attempts + 1),
    ...extra,
    'x-service-timestamp': String(t),
    'x-service-signature': webhookSignature(secret, t, notice.id, body)
  }
  return { headers, body }
}

/**
 * Webhook deliveries (spec, Events: Delivery): an https POST of {event, delivered_at, data}, signed per attempt. A
 * subscription's deliveries are signed with its whsec_ secret (unsealed for the moment of signing); deliveries to a
 * seat's webhook_url with the seat's newest live API key, named by X-Service-Key-Prefix, like legacy notifications.
 * Any 2xx acknowledges; every other answer, a timeout or a refused address is retried.
 */
export function webhookKind ({ store, sealer, notices, outbox, log }: { store: Store, sealer: KeySealer, notices: Notices, outbox: Outbox, log: DeliveryLog }, timeoutMs: number): NoticeKind {
  return {
    ...SIGNED_POST,
    timeoutMs,
    prepare (notice, nowMs) {
      const extra: Record<string, string> = {}
      let secret: string | undefined
      if (notice.webhook_id !== undefined) {
        const w = subscriptionOf(store, notice.webhook_id)
        if (w === undefined) return { cancel: 'the subscription was deleted' }
        if (w.status !== 'active') return { cancel: 'the subscription is disabled' }
        secret = sealer.open(w.webhook_id, w.secret_sealed)
        extra['x-service-webhook-id'] = w.webhook_id
      } else {
        const signing = seatSigningKey(store, sealer, notice.seat_id, undefined, nowMs)
        if (signing === undefined) return { cancel: 'the seat has no live API key to sign with' }
        secret = signing.key
        extra['x-service-key-prefix'] = signing.record.prefix
      }
      if (secret === undefined) return { cancel: 'the signing secret cannot be unsealed' }
      return signedAttempt(notice, nowMs, secret, (t) => `{"event":${JSON.stringify(notice.event)},"delivered_at":"${iso(t * 1000)}","data":${notice.body!}}`, extra)
    },
    recorded (notice, attempt) {
      log.attempted(notice, attempt)
      recordHealth({ store, notices, outbox, log }, notice, attempt)
    }
  }
}
