import { iso } from '../clock.js'
import type { WebhookDeliveryQuery } from '../generated/types.js'
import { cursorOfKey, decodeCursor, pageOf, type Page } from '../http/cursor.js'
import type { Attempt } from '../notify/sender.js'
import type { NoticeRecord } from '../notify/records.js'
import type { DeliveryRecord } from './records.js'
import type { Store } from '../store/store.js'

/** How long the log keeps a delivery (spec, Limits: webhook delivery log, last 7 days). */
export const LOG_DAYS = 7
const HISTORY = 10

type Key = [string, number, string]

const keyOf = (notice: NoticeRecord): Key => [notice.seat_id!.toLowerCase(), -notice.created_at, notice.id]

/**
 * The delivery log of GET /openrtb/v2/webhooks/deliveries: one entry per event and endpoint, written in the
 * transaction that queues the delivery and updated in the one that records each attempt, so the log and the queue
 * never disagree. Keyed by seat and newest first; entries older than 7 days are swept.
 */
export class DeliveryLog {
  readonly #store: Store

  constructor (store: Store) {
    this.#store = store
  }

  /** Records a delivery just queued; call inside Store.write. */
  opened (notice: NoticeRecord, eventId: string): void {
    this.#store.deliveries.putSync(keyOf(notice), {
      delivery_id: notice.id,
      webhook_id: notice.webhook_id ?? null,
      url: notice.url,
      event: notice.event!,
      event_id: eventId,
      status: 'pending',
      attempts: 0,
      created_at: iso(notice.created_at),
      last_attempt_at: null,
      next_attempt_at: null,
      succeeded_at: null,
      response_status: null,
      error: null,
      history: [],
      seat_id: notice.seat_id!
    })
  }

  /** Records what an attempt came to; call inside Store.write. */
  attempted (notice: NoticeRecord, attempt: Attempt): void {
    const key = keyOf(notice)
    const entry = this.#store.deliveries.get(key)
    if (entry === undefined) return
    if (attempt.result === 'canceled') {
      this.#store.deliveries.putSync(key, { ...entry, status: 'canceled', next_attempt_at: null, error: attempt.reason ?? null })
      return
    }
    const at = iso(attempt.at)
    const status = attempt.status ?? null
    const error = attempt.result === 'delivered' ? null : attempt.reason ?? null
    const history = [...entry.history, { attempt: notice.attempts + 1, at, response_status: status, error, duration_ms: attempt.durationMs }].slice(-HISTORY)
    this.#store.deliveries.putSync(key, {
      ...entry,
      status: attempt.result === 'delivered' ? 'succeeded' : attempt.result === 'retrying' ? 'retrying' : 'failed',
      attempts: notice.attempts + 1,
      last_attempt_at: at,
      next_attempt_at: attempt.nextAt !== undefined ? iso(attempt.nextAt) : null,
      succeeded_at: attempt.result === 'delivered' ? at : null,
      response_status: status,
      error,
      history
    })
  }

  /** Marks a queued delivery canceled (its subscription went away); call inside Store.write. */
  canceled (notice: NoticeRecord, reason: string): void {
    this.attempted(notice, { at: 0, result: 'canceled', reason, durationMs: 0 })
  }

  /** One page of a seat's deliveries, newest first, within the retention window. */
  page (seatId: string, q: WebhookDeliveryQuery, now: number): { deliveries: DeliveryRecord[], cursor: Page<DeliveryRecord>['cursor'] } {
    const seat = seatId.toLowerCase()
    const oldest = Math.max(now - LOG_DAYS * 86_400_000, q.since !== undefined ? Date.parse(q.since) : -Infinity)
    const after: Key | undefined = q.cursor !== undefined ? [seat, ...decodeCursor(q.cursor)] : undefined
    const start: Key | [string, number] | [string] = after ?? (q.until !== undefined ? [seat, -Date.parse(q.until) + 1] : [seat])
    const entries = this.#store.deliveries.getRange({ start, end: [seat, -oldest + 1], exclusiveStart: after !== undefined } as never)
    const page = pageOf(entries, q.limit ?? 50, (d) =>
      (q.webhook_id !== undefined && (d.webhook_id ?? 'webhook_url') !== q.webhook_id) || (q.event !== undefined && d.event !== q.event) || (q.status !== undefined && d.status !== q.status) ? undefined : d, cursorOfKey)
    return { deliveries: page.items, cursor: page.cursor }
  }

  /** Deletes entries older than the retention window; returns how many. */
  sweep (now: number): number {
    const cutoff = now - LOG_DAYS * 86_400_000
    let removed = 0
    this.#store.write(() => {
      for (const seat of this.#store.seats.getKeys()) {
        for (const key of this.#store.deliveries.getKeys({ start: [seat, -cutoff + 1], end: [seat + '\u0000'] } as never)) {
          this.#store.deliveries.removeSync(key)
          removed++
        }
      }
    })
    return removed
  }
}
