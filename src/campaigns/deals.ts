import { iso } from '../clock.js'
import { ApiError } from '../errors.js'
import type { Deal } from '../generated/types.js'
import type { Inventory } from '../inventory/inventory.js'
import { datesBetween } from '../inventory/hours.js'
import type { Outbox } from '../store/outbox.js'
import type { DealRecord } from './records.js'
import type { Store } from '../store/store.js'
import { Derived, perStore } from '../store/read-cache.js'
import { take } from './screen-bookings.js'
import { matchingScreens } from './targeting.js'

const bySeat = perStore((store: Store) => new Derived<string, DealRecord[]>(() => store.deals.version))

/** Active deals a seat is invited to; derived once per change of the deals table, since every bid may ask. */
export function activeDealsFor (store: Store, seatId: string): DealRecord[] {
  const seat = seatId.toLowerCase()
  return bySeat(store).of(seat, () => [...store.deals.getRange()].map(({ value }) => value).filter((d) => d.status === 'active' && d.invited_seats.some((s) => s.toLowerCase() === seat)))
}

/** A deal as buyers and the operator see it: what it booked stays inside. */
export function dealView ({ booked_per_day: _b, booked_screens: _s, claim: _claim, ...d }: DealRecord): Deal {
  return d
}

/** The data of a deal.* event (schema DealEvent): the deal's status now and before. */
export function dealEvent (d: DealRecord, previous: DealRecord['status'] | null): Record<string, unknown> {
  return { deal_id: d.deal_id, type: d.type, status: d.status, previous_status: previous, proposed_by: d.proposed_by ?? null }
}

/** What the operator may do to a deal. */
export type DealAction = 'approve' | 'reject' | 'pause' | 'resume'

/** The deal state machine: each action, the states it leaves, the state it reaches, and its past tense for events. */
export const DEAL_MOVES: Record<DealAction, { from: Array<DealRecord['status']>, to: DealRecord['status'], past: string }> = {
  approve: { from: ['pending'], to: 'active', past: 'approved' },
  reject: { from: ['pending'], to: 'rejected', past: 'rejected' },
  pause: { from: ['active'], to: 'paused', past: 'paused' },
  resume: { from: ['paused'], to: 'active', past: 'resumed' }
}

/**
 * Moves a deal and records it (deal.<past> to its proposer, audit.deal.<past>); call inside Store.write. Approving a
 * Guaranteed deal books its committed volume out of availability (impressions spread evenly over matching screens
 * and days, one play per impression), or fails with 409 capacity_unavailable. Only a pending deal can be rejected,
 * and a pending deal has booked nothing.
 */
export function moveDeal ({ store, outbox, inventory }: { store: Store, outbox: Outbox, inventory: Inventory }, dealId: string, action: DealAction, reason: string | undefined, now: number): DealRecord {
  const d = store.deals.get(dealId)
  if (d === undefined) throw new ApiError('deal_not_found', `No deal ${dealId}.`, { param: 'dealId' })
  const move = DEAL_MOVES[action]
  if (!move.from.includes(d.status)) throw new ApiError('invalid_transition', `Cannot ${action} a ${d.status} deal.`, { status: d.status })
  const next: DealRecord = { ...d, status: move.to, updated_at: iso(now) }
  if (reason !== undefined) next.reason = reason
  if (action === 'approve' && d.type === 'Guaranteed') {
    const { ids } = matchingScreens(store, inventory.sourcesEnabled(), d.targeting, d.fixed_cpm, 10_000)
    if (ids.length === 0) throw new ApiError('capacity_unavailable', 'No screen matches this Guaranteed deal\'s targeting.')
    const perDay = Math.ceil(d.impressions_goal! / datesBetween(d.start_date, d.end_date).length / ids.length)
    next.claim = take(store, ids.map((id) => store.screens.get(id)!), d.start_date, d.end_date, perDay, now, 'targeting.screens').claim
    next.booked_per_day = perDay
    next.booked_screens = ids
  }
  store.deals.putSync(d.deal_id, next)
  outbox.append(`deal.${move.past}`, `deal:${d.deal_id}`, dealEvent(next, d.status), d.proposed_by)
  outbox.append(`audit.deal.${move.past}`, `deal:${d.deal_id}`, { actor: 'operator', from: d.status, to: next.status, reason: reason ?? null })
  return next
}
