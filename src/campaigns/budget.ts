import { iso } from '../clock.js'
import { addDelivery, deliveredOf } from './delivery.js'
import { recordDelivery } from './lifecycle.js'
import type { Outbox } from '../store/outbox.js'
import type { CampaignLedger, CampaignRecord } from './records.js'
import type { Store } from '../store/store.js'
import { playCostMicros, toMicros } from '../bidding/auction/money.js'

const DAY = 86_400_000
/** Even pacing may run this far ahead of a straight line through the day, so a quiet morning is not lost. */
const PACING_LEAD_MS = 3_600_000

function dayOf (now: number): string {
  return iso(now).slice(0, 10)
}

/**
 * A campaign's money as of now: its spend and today's over every node (their delivery rows), and the budget this
 * node's exchange bids in flight hold.
 */
export function ledgerOf (store: Store, campaignId: string, now: number): CampaignLedger {
  const { spent_micros: spent, day_spent_micros: today } = deliveredOf(store, campaignId, now)
  return { spent_micros: spent, reserved_micros: store.ledgers.get(campaignId)?.reserved_micros ?? 0, day: dayOf(now), day_spent_micros: today }
}

/** Even pacing's calendar: the days left to spend on (today included), and the share of today's allowance released. */
export interface PaceClock {
  daysLeft: number
  released: number
}

/** Every day of the flight, released along the UTC day an hour ahead of a straight line (the exchange path's calendar). */
export function utcPace (c: Pick<CampaignRecord, 'end_date'>, l: Pick<CampaignLedger, 'day'>, now: number): PaceClock {
  const dayStart = Date.parse(`${l.day}T00:00:00Z`)
  return { daysLeft: Math.max(1, Math.round((Date.parse(`${c.end_date}T00:00:00Z`) - dayStart) / DAY) + 1), released: Math.min(1, (now - dayStart + PACING_LEAD_MS) / DAY) }
}

/**
 * Micro-dollars the campaign may commit to one more play now: what is left of the budget after spend and budget held
 * by bids in flight, and of today's allowance. even: the budget left at the start of today spread over the days left
 * in the flight, released along the day (`pace`; by default every UTC day, an hour ahead of a straight line; a
 * dayparted placement passes its own windows); asap: no daily line. daily_budget_usd caps either.
 */
export function headroom (c: CampaignRecord, l: CampaignLedger, now: number, pace: PaceClock = utcPace(c, l, now)): number {
  const budget = toMicros(c.budget_usd)
  const left = budget - l.spent_micros - l.reserved_micros
  let today = c.pacing === 'asap' ? Infinity : (budget - (l.spent_micros - l.day_spent_micros)) / Math.max(1, pace.daysLeft)
  if (c.daily_budget_usd !== undefined) today = Math.min(today, toMicros(c.daily_budget_usd))
  const line = c.pacing === 'asap' ? today : today * pace.released
  return Math.min(left, line - l.day_spent_micros - l.reserved_micros)
}

/** Holds budget for a bid in flight; call inside Store.write. */
export function hold (store: Store, campaignId: string, micros: number): void {
  store.ledgers.putSync(campaignId, { reserved_micros: (store.ledgers.get(campaignId)?.reserved_micros ?? 0) + micros })
}

/** Gives back budget held by a bid that lost or expired; call inside Store.write. */
export function release (store: Store, campaignId: string, micros: number): void {
  const left = Math.max(0, (store.ledgers.get(campaignId)?.reserved_micros ?? 0) - micros)
  if (left > 0) store.ledgers.putSync(campaignId, { reserved_micros: left })
  else store.ledgers.removeSync(campaignId)
}

/**
 * Turns a held amount into spend: the play's cost counts against budget and today's pace, and the campaign records
 * the delivery (campaign.started on the first, campaign.completed at its goal or budget). A win billed after its
 * campaign stopped running still spent its cost. Call inside Store.write.
 */
export function charge (store: Store, outbox: Outbox, campaignId: string, heldMicros: number, costMicros: number, impressions: number, now: number): void {
  if (heldMicros > 0) release(store, campaignId, heldMicros)
  if (recordDelivery(store, outbox, campaignId, impressions, costMicros, now) === undefined && costMicros > 0) addDelivery(store, campaignId, 0, costMicros, now)
}

/**
 * Charges a priced placement's completed play to its campaign: the CPM on the impressions it counted, at most what is
 * left of the budget (the last play of a budget spends the rest). A campaign no longer running (paused or completed
 * since the spot was decided) is not charged, as it counts no delivery. Answers the micro-dollars charged. Call inside
 * Store.write.
 */
export function chargePlay (store: Store, outbox: Outbox, c: CampaignRecord, cpm: number, multiplier: number, now: number): number {
  if (c.status !== 'active') return 0
  const l = ledgerOf(store, c.campaign_id, now)
  const cost = Math.max(0, Math.min(playCostMicros(cpm, multiplier), toMicros(c.budget_usd) - l.spent_micros))
  charge(store, outbox, c.campaign_id, 0, cost, Math.max(1, Math.round(multiplier)), now)
  return cost
}
