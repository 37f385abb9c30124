import { iso } from '../clock.js'
import { recordDelivery } from '../campaigns/lifecycle.js'
import type { Outbox } from '../store/outbox.js'
import type { CampaignRecord } from '../campaigns/records.js'
import type { CampaignLedger } from './records.js'
import type { Store } from '../store/store.js'
import { fromMicros, toMicros } from '../bidding/auction/money.js'

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

/**
 * Micro-dollars the campaign may commit to one more play now: what is left of the budget after spend and budget held
 * by bids in flight, and of today's allowance. even: the budget left at the start of today spread over the days left
 * in the flight, released along the UTC day (an hour ahead of a straight line); asap: no daily line. daily_budget_usd
 * caps either.
 */
export function headroom (c: CampaignRecord, l: CampaignLedger, now: number): number {
  const budget = toMicros(c.budget_usd)
  const left = budget - l.spent_micros - l.reserved_micros
  const dayStart = Date.parse(`${l.day}T00:00:00Z`)
  const daysLeft = Math.max(1, Math.round((Date.parse(`${c.end_date}T00:00:00Z`) - dayStart) / DAY) + 1)
  let today = c.pacing === 'asap' ? Infinity : (budget - (l.spent_micros - l.day_spent_micros)) / daysLeft
  if (c.daily_budget_usd !== undefined) today = Math.min(today, toMicros(c.daily_budget_usd))
  const line = c.pacing === 'asap' ? today : today * Math.min(1, (now - dayStart + PACING_LEAD_MS) / DAY)
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
