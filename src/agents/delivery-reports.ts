import { randomBytes } from 'node:crypto'
import type { KeySealer } from '../auth/sealed-keys.js'
import { iso } from '../clock.js'
import { ApiError } from '../errors.js'
import type { ReportingWebhook } from '../generated/types.js'
import { callbackUrlProblem } from '../net/url-guard.js'
import type { Notices } from '../notify/notices.js'
import { seatSigningKey } from '../notify/seat-key.js'
import type { NoticeKind } from '../notify/sender.js'
import type { Store } from '../store/store.js'
import { SIGNED_POST, signedAttempt } from '../webhooks/kind.js'
import { buyDelivery } from './delivery.js'
import { saveBuy } from './seat-buys.js'
import type { MediaBuyRecord, MediaBuyReporting } from './records.js'

/** The event name a report goes out as (X-Service-Event). */
const EVENT = 'media_buy.delivery_report'

/** The sealer's id for a buy's reporting credentials: one secret per buy. */
const sealId = (mediaBuyId: string) => `report:${mediaBuyId}`

/** The first report time after `after` (ms) at a cadence: the next UTC hour, midnight or first of a month. */
export function nextReportAt (after: number, frequency: MediaBuyReporting['frequency']): number {
  const d = new Date(after)
  if (frequency === 'hourly') return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate(), d.getUTCHours() + 1)
  if (frequency === 'daily') return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate() + 1)
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1)
}

/** When a buy's next report is due after one at `after`: the next boundary, or the flight's end if that comes first. */
const nextDue = (after: number, frequency: MediaBuyReporting['frequency'], end: string) => Math.min(nextReportAt(after, frequency), Date.parse(end))

/**
 * A buy's reporting from AdCP's reporting_webhook: an https URL on a public host (invalid_parameter otherwise), the
 * credentials sealed. The first report is due at the first cadence boundary after the flight starts (or after now,
 * for a buy already running), its sequence going on from `before`'s.
 */
export function reportingOf (deps: { sealer: KeySealer, config: { allowPrivateCallbackUrls: boolean } }, hook: ReportingWebhook, buy: Pick<MediaBuyRecord, 'media_buy_id' | 'start_time' | 'end_time'>, now: number, before?: MediaBuyReporting): MediaBuyReporting {
  const problem = callbackUrlProblem(hook.url, deps.config.allowPrivateCallbackUrls, ['https:'])
  if (problem !== undefined) throw new ApiError('invalid_parameter', `reporting_webhook.url ${problem}.`, { param: 'reporting_webhook.url' })
  const scheme = hook.authentication?.schemes[0]
  const start = Math.max(Date.parse(buy.start_time), now)
  return {
    url: hook.url,
    frequency: hook.reporting_frequency,
    ...(hook.requested_metrics !== undefined ? { metrics: hook.requested_metrics } : {}),
    ...(hook.token !== undefined ? { token: hook.token } : {}),
    ...(scheme !== undefined ? { scheme, credentials_sealed: deps.sealer.seal(sealId(buy.media_buy_id), hook.authentication!.credentials) } : {}),
    sequence: before?.sequence ?? 0,
    next_at: nextDue(start, hook.reporting_frequency, buy.end_time)
  }
}

/**
 * Sets (or replaces) a buy's reporting and its place in media_buy_reports ([due ms, media_buy_id]), the index the
 * report job reads. Call inside Store.write, before the buy is saved.
 */
export function scheduleReports (store: Store, buy: MediaBuyRecord, reporting: MediaBuyReporting): void {
  if (buy.reporting !== undefined) store.mediaBuyReports.removeSync([buy.reporting.next_at, buy.media_buy_id])
  buy.reporting = reporting
  store.mediaBuyReports.putSync([reporting.next_at, buy.media_buy_id], 1)
}

/** Whether a report is due: the report job takes a cluster's catalog lock only then. */
export function reportsDue (store: Store, now: number): boolean {
  for (const _ of store.mediaBuyReports.getKeys({ end: [now, '\uffff'], limit: 1 } as never)) return true
  return false
}

/**
 * Queues every report that is due: the buy's delivery as of its due time, with its sequence number, as a signed
 * notice (kind report) that the notice sender delivers and retries; then the next one is scheduled, until the one at
 * the flight's end (final). Each report is one transaction with its scheduling, so none is queued twice or lost.
 * Runs in the supervisor's one-second jobs (on a cluster node under the catalog's lock). Answers how many it queued.
 */
export function queueDueReports ({ store, notices }: { store: Store, notices: Notices }, now: number): number {
  const due = [...store.mediaBuyReports.getKeys({ end: [now, '\uffff'] } as never)] as unknown as Array<[number, string]>
  let queued = 0
  for (const [at, id] of due) {
    store.write(() => {
      store.mediaBuyReports.removeSync([at, id])
      const buy = store.mediaBuys.get(id)
      const r = buy?.reporting
      if (buy === undefined || r === undefined || r.next_at !== at) return
      const end = Date.parse(buy.end_time)
      const final = at >= end
      const next = final ? undefined : nextDue(at, r.frequency, buy.end_time)
      const report = {
        notification_type: final ? 'final' : 'scheduled',
        sequence_number: r.sequence + 1,
        ...(next !== undefined ? { next_expected_at: iso(next) } : {}),
        reporting_period: { start: buy.start_time, end: iso(Math.min(at, end)) },
        currency: 'USD',
        ...(r.token !== undefined ? { token: r.token } : {}),
        ...(r.metrics !== undefined ? { requested_metrics: r.metrics } : {}),
        media_buy_deliveries: [buyDelivery(store, buy, at)]
      }
      notices.enqueue({ kind: 'report', url: r.url, seat_id: buy.seat_id, event: EVENT, body: JSON.stringify(report), media_buy_id: id }, now, `del_${randomBytes(12).toString('hex')}`)
      buy.reporting = { ...r, sequence: r.sequence + 1, next_at: next ?? at }
      if (next !== undefined) store.mediaBuyReports.putSync([next, id], 1)
      saveBuy(store, buy)
      queued++
    })
  }
  return queued
}

/**
 * Reports' deliveries: an https POST of the report, signed per attempt as webhooks are (X-Service-Signature over
 * "<t>.<body>"), with the buy's HMAC-SHA256 credentials, or the seat's newest live API key. Retried like webhooks.
 */
export function reportKind ({ store, sealer }: { store: Store, sealer: KeySealer }, timeoutMs: number): NoticeKind {
  return {
    ...SIGNED_POST,
    timeoutMs,
    prepare (notice, nowMs) {
      const r = notice.media_buy_id !== undefined ? store.mediaBuys.get(notice.media_buy_id)?.reporting : undefined
      if (r === undefined) return { cancel: 'the media buy has no reporting webhook' }
      const credentials = r.credentials_sealed !== undefined ? sealer.open(sealId(notice.media_buy_id!), r.credentials_sealed) : undefined
      const extra: Record<string, string> = {}
      let secret: string | undefined
      if (r.scheme === 'HMAC-SHA256') secret = credentials
      else {
        const signing = seatSigningKey(store, sealer, notice.seat_id, undefined, nowMs)
        if (signing === undefined) return { cancel: 'the seat has no live API key to sign with' }
        secret = signing.key
        extra['x-service-key-prefix'] = signing.record.prefix
        if (r.scheme === 'Bearer' && credentials !== undefined) extra.authorization = `Bearer ${credentials}`
      }
      if (secret === undefined) return { cancel: 'the signing secret cannot be unsealed' }
      return signedAttempt(notice, nowMs, secret, () => notice.body!, extra)
    }
  }
}
