import { randomUUID } from 'node:crypto'
import { iso } from '../clock.js'
import type { ResolvedConfig } from '../config.js'
import { ApiError } from '../errors.js'
import { indexForSeat } from '../accounts/seat-lists.js'
import type { Outbox } from '../store/outbox.js'
import type { CreativeWeight, Daypart, LiveAudience } from '../generated/types.js'
import type { AssignmentRecord, CampaignRecord } from './records.js'
import type { Store } from '../store/store.js'
import { rebook, recordIdOf, take } from './screen-bookings.js'

/** How a placement plays and pays beyond its spots (the waterfall line it is; absent: a guaranteed line charging nothing). */
export type LineTerms = Partial<Pick<AssignmentRecord, 'line' | 'cpm' | 'pacing' | 'dayparts' | 'audience' | 'rotation'>>

/**
 * Places a creative on screens: takes the spots (a guaranteed line, unless the caller booked them already: booked,
 * with the claim they are held under), records the placements the player feed reads. A flight (a media buy's
 * instants) makes it play from its start to its end on every screen, whatever the screen's local date. Call inside
 * Store.write.
 */
export function place (deps: { store: Store, outbox: Outbox, config: Pick<ResolvedConfig, 'pickupSeconds'> }, seatId: string, body: { creative_id: string, screen_ids: string[], start_date: string, end_date: string, spots_per_day: number, campaign_id?: string, flight?: { start: number, end: number } } & LineTerms, screens: Parameters<typeof take>[1], now: number, source: string, booked?: { claim: string | undefined }): AssignmentRecord {
  const { store, outbox, config } = deps
  const spots = body.spots_per_day
  const claim = booked !== undefined ? booked.claim : (body.line ?? 'guaranteed') === 'guaranteed' ? take(store, screens, body.start_date, body.end_date, spots, now, undefined, body.dayparts).claim : undefined
  // A booked placement is named by its claim: the same booking run twice (a retry, a node woken from a pause) makes one.
  const id = claim !== undefined ? recordIdOf('as', claim) : `as_${randomUUID().replace(/-/g, '')}`
  const a: AssignmentRecord = {
    assignment_id: id,
    seat_id: seatId,
    creative_id: body.creative_id,
    screen_ids: screens.map((s) => s.screen_id),
    start_date: body.start_date,
    end_date: body.end_date,
    spots_per_day: spots,
    status: 'active',
    effective_at: iso(Math.max(now + config.pickupSeconds * 1000, body.flight?.start ?? 0)),
    source,
    created_at: iso(now)
  }
  if (claim !== undefined) a.claim = claim
  if (body.campaign_id !== undefined) a.campaign_id = body.campaign_id
  if (body.line !== undefined) a.line = body.line
  if (body.cpm !== undefined) a.cpm = body.cpm
  if (body.pacing !== undefined) a.pacing = body.pacing
  if (body.dayparts !== undefined) a.dayparts = body.dayparts
  if (body.audience !== undefined) a.audience = body.audience
  if (body.rotation !== undefined) a.rotation = body.rotation
  if (body.flight !== undefined) a.ends_at = iso(body.flight.end)
  store.assignments.putSync(id, a)
  for (const s of a.screen_ids) store.placements.putSync([s, a.start_date, id], id)
  indexForSeat(store, 'assignment', seatId, now, id)
  outbox.append('campaign.allocated', `assignment:${id}`, { campaign_id: a.campaign_id ?? null, assignment_id: id, creative_id: a.creative_id, screen_ids: a.screen_ids, matching_screens: a.screen_ids.length, start_date: a.start_date, end_date: a.end_date, effective_at: a.effective_at }, seatId)
  return a
}

/** The seat's campaign with this id; 404 campaign_not_found when it is unknown or another seat's. */
export function seatCampaign (store: Store, seatId: string, id: string): CampaignRecord {
  const c = store.campaigns.get(id)
  if (c === undefined || c.seat_id.toLowerCase() !== seatId.toLowerCase()) throw new ApiError('campaign_not_found', `No campaign ${id} belongs to this seat.`, { param: 'id' })
  return c
}

/** Sets the creatives a placement rotates among, from its next spot on. Call inside Store.write. */
export function setRotation (store: Store, a: AssignmentRecord, rotation: CreativeWeight[]): AssignmentRecord {
  const next: AssignmentRecord = { ...a, rotation }
  store.assignments.putSync(a.assignment_id, next)
  return next
}

/** Pauses or resumes a placement: a paused one keeps its spots and does not play. Call inside Store.write. */
export function setPlacementPaused (store: Store, a: AssignmentRecord, paused: boolean): AssignmentRecord {
  if (a.status === 'completed') return a
  const next: AssignmentRecord = { ...a, status: paused ? 'paused' : 'active' }
  store.assignments.putSync(a.assignment_id, next)
  return next
}

/**
 * Books a placement's screens for another number of spots a day: its spots are given back and the new number taken
 * (409 capacity_unavailable, nothing changed, when a screen cannot take them). Call inside Store.write.
 */
export function respot (store: Store, a: AssignmentRecord, screens: Parameters<typeof take>[1], spots: number, now: number, param?: string): AssignmentRecord {
  const { claim } = rebook(store, { claim: a.claim, screen_ids: a.screen_ids, start_date: a.start_date, end_date: a.end_date, spots: a.spots_per_day, dayparts: a.dayparts }, screens, spots, now, param, a.dayparts)
  const next: AssignmentRecord = { ...a, spots_per_day: spots, claim }
  store.assignments.putSync(a.assignment_id, next)
  return next
}

/**
 * Changes what a preferred or auction placement may play and pay: nothing is booked for those, so nothing is given
 * back or taken (guaranteed placements change their spots through respot). Call inside Store.write.
 */
export function setPlacementTerms (store: Store, a: AssignmentRecord, terms: { spots_per_day: number, cpm: number, pacing: 'even' | 'asap', dayparts: Daypart[] | undefined, audience: LiveAudience | undefined }): AssignmentRecord {
  if ((a.line ?? 'guaranteed') === 'guaranteed') throw new Error(`placement ${a.assignment_id} is guaranteed: its spots change through respot`)
  const { dayparts, audience, ...rest } = terms
  const { dayparts: _before, audience: _was, ...kept } = a
  const next: AssignmentRecord = { ...kept, ...rest, ...(dayparts !== undefined ? { dayparts } : {}), ...(audience !== undefined ? { audience } : {}) }
  store.assignments.putSync(a.assignment_id, next)
  return next
}
