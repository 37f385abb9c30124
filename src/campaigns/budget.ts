import { iso } from '../clock.js'
import { addDelivery, addLease, deliveredOf, giveUpLease, leaseOf, unspentLeases } from './delivery.js'
import { recordDelivery } from './lifecycle.js'
import type { Outbox } from '../store/outbox.js'
import type { CampaignLedger, CampaignRecord } from './records.js'
import type { Store } from '../store/store.js'
import { playCostMicros, toMicros } from '../money.js'

const DAY = 86_400_000
/** Even pacing may run this far ahead of a straight line through the day, so a quiet morning is not lost. */
const PACING_LEAD_MS = 3_600_000

function dayOf (now: number): string {
  return iso(now).slice(0, 10)
}

/**
 * The part of a campaign's budget a cluster node asks for at a time: 5% of it, and at least four of the plays it is
 * deciding, so that the next part, asked for when less than half is left, lands while two plays are still covered.
 */
export function leasePart (c: Pick<CampaignRecord, 'budget_usd'>, playMicros = 0): number {
  return Math.max(10_000, Math.round(toMicros(c.budget_usd) / 20), 4 * playMicros)
}

/** A cluster node's side of its budget grants (src/cluster/budget-grants.ts): a running campaign's budget, and a part granted. */
export function budgetBook (store: Store, now: () => number): { limitOf (campaignId: string): number | undefined, grantedBefore (campaignId: string): number, granted (campaignId: string, micros: number, seq: number): void, unspent (): string[], leaseOf (campaignId: string): { spent: number, left: number }, giveUp (campaignId: string): number } {
  return {
    limitOf (campaignId) {
      store.refresh()
      const c = store.campaigns.get(campaignId)
      return c !== undefined && c.status === 'active' ? toMicros(c.budget_usd) : undefined
    },
    grantedBefore: (campaignId) => deliveredOf(store, campaignId).leased_micros,
    granted: (campaignId, micros, seq) => addLease(store, campaignId, micros, seq, now()),
    unspent: () => {
      store.refresh()
      return unspentLeases(store)
    },
    leaseOf: (campaignId) => leaseOf(store, campaignId),
    giveUp: (campaignId) => store.write(() => giveUpLease(store, campaignId))
  }
}

/**
 * A campaign's money as of now: its spend and today's over every node (their delivery rows), and the budget this
 * node's exchange bids in flight hold. Where the node commits only parts of a budget granted to it (Store.share),
 * also what it may still commit of them; when that falls under half a part (for a play of playMicros) the share asks
 * for the next, ahead of need.
 */
export function ledgerOf (store: Store, campaignId: string, now: number, playMicros = 0): CampaignLedger {
  const { spent_micros: spent, day_spent_micros: today } = deliveredOf(store, campaignId, now)
  const reserved = store.ledgers.get(campaignId)?.reserved_micros ?? 0
  const ledger: CampaignLedger = { spent_micros: spent, reserved_micros: reserved, day: dayOf(now), day_spent_micros: today }
  const c = store.campaigns.get(campaignId)
  const owed = c !== undefined && c.status === 'active' && spent + reserved < toMicros(c.budget_usd)
  const left = store.share.budgetLeft(store, campaignId, reserved, c !== undefined ? leasePart(c, playMicros) : 0, owed, now)
  if (left !== undefined) ledger.lease_left_micros = left
  return ledger
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
 * dayparted placement passes its own windows); asap: no daily line. daily_budget_usd caps either. A cluster node's
 * leases stand for the budget left.
 */
export function headroom (c: CampaignRecord, l: CampaignLedger, now: number, pace: PaceClock = utcPace(c, l, now)): number {
  const budget = toMicros(c.budget_usd)
  // A cluster node spends its leases, not the budget left over every node: other nodes' unspent leases are theirs.
  // While some of its leases is left it may commit to a play that costs more, so that no node is left holding a
  // remnant smaller than a play: the nodes together can go past the budget by less than a play each.
  const left = l.lease_left_micros === undefined ? budget - l.spent_micros - l.reserved_micros : l.lease_left_micros > 0 ? Infinity : l.lease_left_micros
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
  const cost = Math.max(0, Math.min(playCostMicros(cpm, multiplier), toMicros(c.budget_usd) - l.spent_micros, l.lease_left_micros ?? Infinity))
  charge(store, outbox, c.campaign_id, 0, cost, Math.max(1, Math.round(multiplier)), now)
  return cost
}
