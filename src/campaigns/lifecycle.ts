import { iso } from '../clock.js'
import type { Outbox } from '../store/outbox.js'
import type { CampaignRecord, DealRecord } from './records.js'
import type { Store } from '../store/store.js'
import { dealOverEverywhere } from '../bidding/rules.js'
import { give } from './screen-bookings.js'
import { dealEvent } from './deals.js'

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

/**
 * Time-driven moves, on the injected clock: reservation holds expire (their spots return), campaigns start and end
 * with their flight dates (campaign.completed), deals expire once end_date is over on every screen's calendar. Runs
 * every second and on demand.
 */
export function runCampaignJobs (store: Store, outbox: Outbox, now: number): { expiredHolds: number, campaignMoves: number, expiredDeals: number } {
  const result = { expiredHolds: 0, campaignMoves: 0, expiredDeals: 0 }
  const due = [...store.holds.getRange({ end: [now, '\uffff'] } as never)].map(({ key, value }) => ({ key: key as unknown as [number, string], id: value }))
  const campaigns = [...store.campaigns.getRange()].filter(({ value }) => datedStatus(value, now) !== value.status)
  const deals = [...store.deals.getRange()].filter(({ value }) => ['active', 'paused', 'pending'].includes(value.status) && dealOverEverywhere(value, now))
  if (due.length === 0 && campaigns.length === 0 && deals.length === 0) return result
  store.write(() => {
    for (const { key, id } of due) {
      store.holds.removeSync(key)
      const r = store.reservations.get(id)
      if (r === undefined || r.status !== 'held') continue
      give(store, r.screen_ids, r.start_date, r.end_date, r.spots_per_day)
      store.reservations.putSync(id, { ...r, status: 'expired' })
      outbox.append('reservation.expired', `reservation:${id}`, { reservation_id: id }, r.seat_id)
      result.expiredHolds++
    }
    for (const { key, value } of campaigns) {
      const status = datedStatus(value, now)
      const next: CampaignRecord = { ...value, status, updated_at: iso(now) }
      if (status === 'completed') next.completed_reason = 'end_date passed'
      store.campaigns.putSync(key, next)
      if (status === 'completed') outbox.append('campaign.completed', `campaign:${key}`, { campaign_id: key, reason: next.completed_reason, impressions: value.impressions, spent_usd: value.spent_usd }, value.seat_id)
      result.campaignMoves++
    }
    for (const { key, value } of deals) {
      const expired: DealRecord = { ...value, status: 'expired', updated_at: iso(now) }
      store.deals.putSync(key, expired)
      outbox.append('deal.expired', `deal:${key}`, dealEvent(expired, value.status), value.proposed_by)
      result.expiredDeals++
    }
  })
  return result
}

/**
 * Records delivered impressions and their cost against a campaign (called by the impression pipeline): the first
 * emits campaign.started; reaching goal_impressions or the budget completes it (campaign.completed). Call inside
 * Store.write.
 */
export function recordDelivery (store: Store, outbox: Outbox, campaignId: string, impressions: number, costUsd: number, now: number): CampaignRecord | undefined {
  const c = store.campaigns.get(campaignId)
  if (c === undefined || c.status !== 'active') return undefined
  const next: CampaignRecord = { ...c, impressions: c.impressions + impressions, spent_usd: Math.round((c.spent_usd + costUsd) * 1e6) / 1e6, updated_at: iso(now) }
  if (c.started_at === undefined) {
    next.started_at = iso(now)
    outbox.append('campaign.started', `campaign:${campaignId}`, { campaign_id: campaignId, started_at: next.started_at }, c.seat_id)
  }
  const goal = c.goal_impressions !== undefined && next.impressions >= c.goal_impressions
  if (goal || next.spent_usd >= c.budget_usd) {
    next.status = 'completed'
    next.completed_reason = goal ? 'goal_impressions reached' : 'budget spent'
    outbox.append('campaign.completed', `campaign:${campaignId}`, { campaign_id: campaignId, reason: next.completed_reason, impressions: next.impressions, spent_usd: next.spent_usd }, c.seat_id)
  }
  store.campaigns.putSync(campaignId, next)
  return next
}
