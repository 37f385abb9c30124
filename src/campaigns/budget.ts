import { iso } from '../clock.js'
import { recordDelivery } from './lifecycle.js'
import type { Outbox } from '../store/outbox.js'
import type { CampaignLedger, CampaignRecord } from './records.js'
import type { Store } from '../store/store.js'
import { fromMicros, playCostMicros, toMicros } from '../bidding/auction/money.js'

const DAY = 86_400_000
/** Even pacing may run this far ahead of a straight line through the day, so a quiet morning is not lost. */
const PACING_LEAD_MS = 3_600_000

function dayOf (now: number): string {
  return iso(now).slice(0, 10)
}

/** A campaign's ledger as of today (yesterday's spend no longer counts against today's pace). */
export function ledgerOf (store: Store, campaignId: string, now: number): CampaignLedger {
  const day = dayOf(now)
  const l = store.ledgers.get(campaignId) ?? { spent_micros: 0, reserved_micros: 0, day, day_spent_micros: 0 }
  return l.day === day ? l : { ...l, day, day_spent_micros: 0 }
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
export function hold (store: Store, campaignId: string, micros: number, now: number): void {
  const l = ledgerOf(store, campaignId, now)
  store.ledgers.putSync(campaignId, { ...l, reserved_micros: l.reserved_micros + micros })
}

/** Gives back budget held by a bid that lost or expired; call inside Store.write. */
export function release (store: Store, campaignId: string, micros: number, now: number): void {
  const l = ledgerOf(store, campaignId, now)
  store.ledgers.putSync(campaignId, { ...l, reserved_micros: Math.max(0, l.reserved_micros - micros) })
}

/**
 * Turns a held amount into spend: the play's cost counts against budget and today's pace, and the campaign records
 * the delivery (campaign.started on the first, campaign.completed at its goal or budget). Call inside Store.write.
 */
export function charge (store: Store, outbox: Outbox, campaignId: string, heldMicros: number, costMicros: number, impressions: number, now: number): void {
  const l = ledgerOf(store, campaignId, now)
  store.ledgers.putSync(campaignId, { ...l, reserved_micros: Math.max(0, l.reserved_micros - heldMicros), spent_micros: l.spent_micros + costMicros, day_spent_micros: l.day_spent_micros + costMicros })
  recordDelivery(store, outbox, campaignId, impressions, fromMicros(costMicros), now)
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
