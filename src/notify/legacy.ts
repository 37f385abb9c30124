import { createHmac } from 'node:crypto'
import type { KeySealer } from '../auth/sealed-keys.js'
import type { KeyRecord, NoticeRecord } from '../store/records.js'
import type { Store } from '../store/store.js'

/**
 * Signs legacy notifications with the seat's API key (spec, Authentication 6): HMAC-SHA256 over
 * "<unix seconds>.<raw body>", sent as X-Service-Signature: t=<seconds>,v1=<hex>, the scheme of Stripe-style webhooks
 * so the same verifier code serves both. The key is unsealed only for the moment of signing.
 */
export class LegacySigner {
  readonly #store: Store
  readonly #sealer: KeySealer

  constructor (store: Store, sealer: KeySealer) {
    this.#store = store
    this.#sealer = sealer
  }

  /** The key that signs for a notice: the one that bid, else the seat's newest live sealed key. */
  #signingKey (notice: NoticeRecord, now: number): { record: KeyRecord, key: string } | undefined {
    const live = (k: KeyRecord | undefined): k is KeyRecord & { sealed: string } =>
      k !== undefined && k.sealed !== undefined && k.revoked_at === null && (k.expires_at === undefined || Date.parse(k.expires_at) > now)
    let record = notice.key_id !== undefined ? this.#store.keys.get(notice.key_id) : undefined
    if (!live(record) && notice.seat_id !== undefined) {
      const seat = this.#store.seats.get(notice.seat_id.toLowerCase())
      record = [...(seat?.key_ids ?? [])].reverse().map((id) => this.#store.keys.get(id)).find(live)
    }
    if (!live(record)) return undefined
    const key = this.#sealer.open(record.key_id, record.sealed)
    return key === undefined ? undefined : { record, key }
  }

  /** The headers of one delivery attempt, or undefined when the seat has no key that can sign (the notice is dropped). */
  headers (notice: NoticeRecord, nowMs: number): Record<string, string> | undefined {
    const signing = this.#signingKey(notice, nowMs)
    if (signing === undefined || notice.body === undefined) return undefined
    const t = Math.floor(nowMs / 1000)
    return {
      'content-type': 'application/json',
      'x-service-event': notice.event ?? '',
      'x-service-delivery-id': notice.id,
      'x-service-timestamp': String(t),
      'x-service-key-prefix': signing.record.prefix,
      'x-service-signature': `t=${t},v1=${createHmac('sha256', signing.key).update(`${t}.${notice.body}`).digest('hex')}`
    }
  }
}
