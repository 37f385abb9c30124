import { iso } from '../clock.js'
import type { Outbox } from '../store/outbox.js'
import type { CampaignRecord, DealRecord } from './records.js'
import type { Store } from '../store/store.js'
import { dealOverEverywhere } from './deal-rules.js'
import { give } from './screen-bookings.js'
import { dealEvent } from './deals.js'
import { addDelivery, deliveredOf } from './delivery.js'
import { putReservation } from './holds.js'
import { fromMicros, toMicros } from '../money.js'

/** Today's date (UTC) of a clock reading. */
export function today (ms: number): string {
  return iso(ms).slice(0, 10)
}

/** The status a campaign's dates give it, unless the seat paused it or it already completed. */
export function datedStatus (c: Pick<CampaignRecord, 'status' | 'start_date' | 'end_date'>, ms: number): CampaignRecord['status'] {
  if (c.status === 'paused' || c.status === 'completed') return c.status
  const d = today(ms)
  if (d > c.end_date) return 'completed'
  return d >= c.start_date ? 'active' : 'scheduled'
}

/** The holds past their time, by when they lapse. */
function lapsedHolds (store: Store, now: number): Array<{ key: [number, string], id: string }> {
  return [...store.holds.getRange({ end: [now, '\uffff'] } as never)].map(({ key, value }) => ({ key: key as unknown as [number, string], id: value }))
}

/**
 * Asks for the lapse of the held reservations past their time where bookings are decided elsewhere (a cluster's
 * claims log), writing nothing: what a booking whose takes are declared (RouteDef.declares) asks before they are
 * decided, as its handler's runCampaignJobs would first, so that a lapsed hold's spots are free for it. Alone, the
 * handler's own transaction gives them back first.
 */
export function askLapses (store: Store, now: number): void {
  const bookings = store.share.bookings
  if (bookings === undefined) return
  for (const { id } of lapsedHolds(store, now)) {
    const r = store.reservations.get(id)
    if (r?.status === 'held' && r.claim !== undefined) bookings.give(store, r.claim, 'expire', now)
  }
}

/** The time-driven moves due now: holds past their time, campaigns whose dates or delivery move them, deals over everywhere. */
function dueMoves (store: Store, now: number) {
  const campaigns = [...store.campaigns.getRange()]
  return {
    holds: lapsedHolds(store, now),
    campaigns: campaigns.filter(({ value }) => datedStatus(value, now) !== value.status),
    // Raised here only when plays do not raise them (recordDelivery, Store.share).
    milestones: store.share.milestonesWithPlay ? [] : campaigns.filter(({ value }) => value.status === 'active' && milestonesOf(store, value) !== undefined),
    deals: [...store.deals.getRange()].filter(({ value }) => ['active', 'paused', 'pending'].includes(value.status) && dealOverEverywhere(value, now))
  }
}

/**
 * What an active campaign's delivery over every node calls for: campaign.started at its first impression,
 * campaign.completed at its goal or budget; undefined when nothing.
 */
function milestonesOf (store: Store, c: CampaignRecord): { start: boolean, complete?: string, delivered: ReturnType<typeof deliveredOf> } | undefined {
  const delivered = deliveredOf(store, c.campaign_id)
  const start = c.started_at === undefined && delivered.impressions > 0
  const complete = c.goal_impressions !== undefined && delivered.impressions >= c.goal_impressions ? 'goal_impressions reached' : delivered.spent_micros >= toMicros(c.budget_usd) ? 'budget spent' : undefined
  return start || complete !== undefined ? { start, ...(complete !== undefined ? { complete } : {}), delivered } : undefined
}

/** Raises what a campaign's delivery calls for (milestonesOf) and records it in its row. Call inside Store.write. */
function reachMilestones (store: Store, outbox: Outbox, c: CampaignRecord, now: number): CampaignRecord {
  const due = milestonesOf(store, c)
  if (due === undefined) return c
  const next: CampaignRecord = { ...c, updated_at: iso(now) }
  const { delivered } = due
  if (due.start) {
    next.started_at = delivered.started_at ?? iso(now)
    outbox.append('campaign.started', `campaign:${c.campaign_id}`, { campaign_id: c.campaign_id, started_at: next.started_at }, c.seat_id)
  }
  if (due.complete !== undefined) {
    next.status = 'completed'
    next.completed_reason = due.complete
    outbox.append('campaign.completed', `campaign:${c.campaign_id}`, { campaign_id: c.campaign_id, reason: due.complete, impressions: delivered.impressions, spent_usd: fromMicros(delivered.spent_micros) }, c.seat_id)
  }
  store.campaigns.putSync(c.campaign_id, next)
  return next
}

/** Whether runCampaignJobs has anything to do now: a cluster node takes the catalog lock only then. */
export function campaignJobsDue (store: Store, now: number): boolean {
  const due = dueMoves(store, now)
  return due.holds.length > 0 || due.campaigns.length > 0 || due.milestones.length > 0 || due.deals.length > 0
}

/**
 * Time-driven moves, on the injected clock: reservation holds expire (their spots return), campaigns start and end
 * with their flight dates (campaign.completed), deals expire once end_date is over on every screen's calendar. Runs
 * every second and on demand; on a cluster node only under the catalog lock, so that each move and its event happen
 * once.
 */
export function runCampaignJobs (store: Store, outbox: Outbox, now: number): { expiredHolds: number, campaignMoves: number, expiredDeals: number } {
  const result = { expiredHolds: 0, campaignMoves: 0, expiredDeals: 0 }
  const due = dueMoves(store, now)
  if (due.holds.length === 0 && due.campaigns.length === 0 && due.milestones.length === 0 && due.deals.length === 0) return result
  store.write(() => {
    for (const { key, id } of due.holds) {
      const r = store.reservations.get(id)
      const given = r?.status === 'held' ? give(store, { claim: r.claim, screen_ids: r.screen_ids, start_date: r.start_date, end_date: r.end_date, spots: r.spots_per_day }, 'expire', now) : undefined
      // Its lapse not decided yet (a cluster's claims log): the next run looks again.
      if (given?.ok === false && given.reason === 'pending') continue
      store.holds.removeSync(key)
      // Given back before, or kept (confirmed) first: it did not expire.
      if (r === undefined || given?.ok !== true) continue
      putReservation(store, { ...r, status: 'expired' })
      outbox.append('reservation.expired', `reservation:${id}`, { reservation_id: id }, r.seat_id)
      result.expiredHolds++
    }
    for (const { key, value } of due.campaigns) {
      const status = datedStatus(value, now)
      const next: CampaignRecord = { ...value, status, updated_at: iso(now) }
      if (status === 'completed') next.completed_reason = 'end_date passed'
      store.campaigns.putSync(key, next)
      if (status === 'completed') {
        const { impressions, spent_micros: spent } = deliveredOf(store, key)
        outbox.append('campaign.completed', `campaign:${key}`, { campaign_id: key, reason: next.completed_reason, impressions, spent_usd: fromMicros(spent) }, value.seat_id)
      }
      result.campaignMoves++
    }
    // Plays that record delivery only (a cluster node's): the start and end it calls for are raised here, once.
    for (const { value } of due.milestones) {
      const c = store.campaigns.get(value.campaign_id)
      if (c !== undefined && c.status === 'active') reachMilestones(store, outbox, c, now)
    }
    for (const { key, value } of due.deals) {
      const expired: DealRecord = { ...value, status: 'expired', updated_at: iso(now) }
      store.deals.putSync(key, expired)
      outbox.append('deal.expired', `deal:${key}`, dealEvent(expired, value.status), value.proposed_by)
      result.expiredDeals++
    }
  })
  return result
}

/**
 * Records delivered impressions and their cost (micro-dollars) against a campaign (called by the impression pipeline)
 * in this node's delivery row. The first emits campaign.started and reaching goal_impressions or the budget completes it
 * (campaign.completed), at once when the node's share says plays raise milestones (one node alone); else the
 * catalog's job raises each once from every node's delivery. Call inside Store.write.
 */
export function recordDelivery (store: Store, outbox: Outbox, campaignId: string, impressions: number, costMicros: number, now: number): CampaignRecord | undefined {
  const c = store.campaigns.get(campaignId)
  if (c === undefined || c.status !== 'active') return undefined
  addDelivery(store, campaignId, impressions, costMicros, now)
  return store.share.milestonesWithPlay ? reachMilestones(store, outbox, c, now) : c
}
