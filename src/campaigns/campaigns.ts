import { randomUUID } from 'node:crypto'
import { iso } from '../clock.js'
import type { Targeting } from '../generated/types.js'
import { ApiError } from '../errors.js'
import { indexForSeat } from '../accounts/seat-lists.js'
import type { Inventory } from '../inventory/inventory.js'
import type { Outbox } from '../store/outbox.js'
import type { Store } from '../store/store.js'
import { datedStatus } from './lifecycle.js'
import type { CampaignRecord } from './records.js'
import { matchingScreens } from './targeting.js'

/** What a new campaign is made of, defaults already applied and the targeting normalized (normalizeTargeting). */
export interface NewCampaign {
  name: string
  creative_id: string
  targeting: Targeting
  budget_usd: number
  pacing: CampaignRecord['pacing']
  start_date: string
  end_date: string
  daily_budget_usd?: number
  bid_cpm?: number
  goal_impressions?: number
  media_buy_id?: string
}

/**
 * Records a campaign for the seat (its creative already checked as approved) with its seat-list index and
 * campaign.allocated; answers it with the ids of the first matching screens and how many match. Call inside
 * Store.write. Both the REST route and the AI buying agents' media buys create campaigns here.
 */
export function createCampaign ({ store, outbox, inventory }: { store: Store, outbox: Outbox, inventory: Inventory }, seatId: string, body: NewCampaign, now: number): { campaign: CampaignRecord, ids: string[] } {
  if (body.daily_budget_usd !== undefined && body.daily_budget_usd > body.budget_usd) throw new ApiError('invalid_budget', 'daily_budget_usd exceeds budget_usd.', { param: 'daily_budget_usd' })
  const { ids, count } = matchingScreens(store, inventory.sourcesEnabled(), body.targeting, body.bid_cpm)
  const stamp = iso(now)
  const id = `cmp_${randomUUID().replace(/-/g, '')}`
  const c: CampaignRecord = {
    campaign_id: id,
    seat_id: seatId,
    name: body.name,
    creative_id: body.creative_id,
    status: 'scheduled',
    targeting: body.targeting,
    budget_usd: body.budget_usd,
    pacing: body.pacing,
    start_date: body.start_date,
    end_date: body.end_date,
    matching_screens: count,
    created_at: stamp,
    updated_at: stamp
  }
  c.status = datedStatus(c, now)
  if (body.daily_budget_usd !== undefined) c.daily_budget_usd = body.daily_budget_usd
  if (body.bid_cpm !== undefined) c.bid_cpm = body.bid_cpm
  if (body.goal_impressions !== undefined) c.goal_impressions = body.goal_impressions
  if (body.media_buy_id !== undefined) c.media_buy_id = body.media_buy_id
  store.campaigns.putSync(id, c)
  indexForSeat(store, 'campaign', seatId, now, id)
  outbox.append('campaign.allocated', `campaign:${id}`, { campaign_id: id, assignment_id: null, creative_id: c.creative_id, screen_ids: null, matching_screens: count, start_date: c.start_date, end_date: c.end_date, effective_at: null }, seatId)
  return { campaign: c, ids }
}

/**
 * Pauses (from scheduled or active) or resumes (from paused: back to what its dates say) a campaign, with
 * campaign.paused or campaign.resumed; 409 invalid_transition from any other status. Call inside Store.write.
 */
export function moveCampaign (store: Store, outbox: Outbox, c: CampaignRecord, move: 'pause' | 'resume', now: number, reason: string | null = null): CampaignRecord {
  const allowed = move === 'pause' ? c.status === 'scheduled' || c.status === 'active' : c.status === 'paused'
  if (!allowed) throw new ApiError('invalid_transition', `A ${c.status} campaign cannot be ${move}d.`, { status: c.status })
  const status = move === 'pause' ? 'paused' : datedStatus({ ...c, status: 'active' }, now)
  const next: CampaignRecord = { ...c, status, updated_at: iso(now) }
  if (status === 'completed') next.completed_reason = 'end_date passed'
  store.campaigns.putSync(c.campaign_id, next)
  outbox.append(`campaign.${move}d`, `campaign:${c.campaign_id}`, { campaign_id: c.campaign_id, status, reason }, c.seat_id)
  return next
}

/** Changes what a campaign may spend and aims for, and how it paces (campaign.updated). Call inside Store.write. */
export function retermCampaign (store: Store, outbox: Outbox, c: CampaignRecord, terms: Partial<Pick<CampaignRecord, 'budget_usd' | 'pacing' | 'goal_impressions'>>, now: number): CampaignRecord {
  const next: CampaignRecord = { ...c, ...terms, updated_at: iso(now) }
  store.campaigns.putSync(c.campaign_id, next)
  outbox.append('campaign.updated', `campaign:${c.campaign_id}`, { campaign_id: c.campaign_id, ...terms }, c.seat_id)
  return next
}
