import { signRequest } from '../auth/hmac.js'
import type { KeySealer } from '../auth/sealed-keys.js'
import type { Store } from '../store/store.js'
import { seatSigningKey } from './seat-key.js'
import type { NoticeKind } from './sender.js'

/** OpenRTB notices are worthless after minutes; billing notices are kept longer because they move money. */
const OPENRTB_RETRIES = [1, 4, 15, 60, 300]

/** OpenRTB nurl, lurl and burl (section 4.4): GET, any status below 400 acknowledges, a 4xx is final. */
function openRtbNotice (retries: readonly number[], timeoutMs: number): NoticeKind {
  return {
    method: 'GET',
    schemes: ['http:', 'https:'],
    timeoutMs,
    retries,
    jitter: 0,
    delivered: (status) => status >= 200 && status < 400,
    finalOn4xx: true,
    prepare: () => ({ headers: { 'user-agent': 'oohbid-notifier/1.0' } })
  }
}

/**
 * Legacy win/loss notifications (spec, Legacy notifications): a POST signed with the seat's API key, HMAC-SHA256 over
 * "<unix seconds>.<raw body>", sent as X-Service-Signature: t=<seconds>,v1=<hex>, the scheme of Stripe-style webhooks
 * so that the same verifier serves both. A seat left with no key that can sign has its notice dropped.
 */
function legacyNotice (store: Store, sealer: KeySealer, timeoutMs: number): NoticeKind {
  return {
    method: 'POST',
    schemes: ['https:'],
    timeoutMs,
    retries: [1, 4, 15, 60, 300, 1800, 7200],
    jitter: 0,
    delivered: (status) => status >= 200 && status < 300,
    finalOn4xx: true,
    prepare (notice, nowMs) {
      const signing = seatSigningKey(store, sealer, notice.seat_id, notice.key_id, nowMs)
      if (signing === undefined || notice.body === undefined) return { cancel: 'the seat has no live API key to sign with' }
      const t = Math.floor(nowMs / 1000)
      return {
        body: notice.body,
        headers: {
          'user-agent': 'oohbid-notifier/1.0',
          'content-type': 'application/json',
          'x-service-event': notice.event ?? '',
          'x-service-delivery-id': notice.id,
          'x-service-timestamp': String(t),
          'x-service-key-prefix': signing.record.prefix,
          'x-service-signature': signRequest(signing.key, t, notice.body)
        }
      }
    }
  }
}

/** The notice kinds of the bidding path: OpenRTB notices and legacy notifications. */
export function biddingKinds (store: Store, sealer: KeySealer, timeoutMs: number): Record<'nurl' | 'lurl' | 'burl' | 'legacy', NoticeKind> {
  return {
    nurl: openRtbNotice(OPENRTB_RETRIES, timeoutMs),
    lurl: openRtbNotice(OPENRTB_RETRIES, timeoutMs),
    burl: openRtbNotice([...OPENRTB_RETRIES, 1800], timeoutMs),
    legacy: legacyNotice(store, sealer, timeoutMs)
  }
}
