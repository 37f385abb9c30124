import { askOf, give, keep, recordIdOf, take } from '../screen-bookings.js'
import { askLapses, runCampaignJobs } from '../lifecycle.js'
import { iso } from '../../clock.js'
import type { Deps } from '../../deps.js'
import { ApiError } from '../../errors.js'
import type { ListQuery, Reservation, ReservationConfirmRequest, ReservationRequest } from '../../generated/types.js'
import { ok, route, type Ctx, type RouteDef } from '../../http/route.js'
import type { ScreenRecord } from '../../inventory/records.js'
import type { ReservationRecord } from '../records.js'
import { place } from '../placements.js'
import { putReservation } from '../holds.js'
import { indexForSeat, seatPage } from '../../accounts/seat-lists.js'
import { approvedCreative, checkFlight, usableScreens } from '../inputs.js'

function view ({ seat_id: _seat, expires_ms: _expires, claim: _claim, ...r }: ReservationRecord): Reservation {
  return r
}

/**
 * Reservations (spec, Reservations): hold capacity for 15 minutes, confirm into a placement, release, or let expire.
 * States: held -> confirmed | released | expired; after the hold every access answers 410 expired.
 */
export function reservationRoutes (deps: Deps): RouteDef[] {
  const { store, outbox, inventory, config } = deps
  const common = { tag: 'Reservations', envelope: 'flat', auth: 'seat', scope: 'campaigns:write', rateGroup: 'campaigns' } as const
  /** The seat's reservation; a hold past its time is expired whether or not the job has run yet. */
  const own = (seatId: string, id: string, now: number): ReservationRecord => {
    const r = store.reservations.get(id)
    if (r === undefined || r.seat_id.toLowerCase() !== seatId.toLowerCase()) throw new ApiError('reservation_not_found', `No reservation ${id} belongs to this seat.`, { param: 'id' })
    if (r.status === 'expired' || (r.status === 'held' && r.expires_ms <= now)) throw new ApiError('expired', `Reservation ${id} expired at ${r.expires_at}; create a new one.`)
    return r
  }
  const holdMs = config.reservationHoldSeconds * 1000
  /** The screens a hold asks for, once its request is checked: what its handler takes, and its declaration names. */
  const heldScreens = (ctx: Ctx<ReservationRequest>): ScreenRecord[] => {
    const body = ctx.body
    checkFlight(body.start_date, body.end_date, ctx.now)
    if (body.creative_id !== undefined) approvedCreative(store, ctx.principal!.seat!.seat_id, body.creative_id)
    return usableScreens(inventory, body.screen_ids)
  }
  return [
    route<ReservationRequest>({
      ...common,
      method: 'post',
      path: '/openrtb/v2/reservations',
      summary: 'Hold capacity on screens for 15 minutes',
      description: 'Holds spots_per_day on every screen for every day of the range, checked against availability at once (409 capacity_unavailable names the short screen and day); held spots count as booked in availability until confirmed, released or expired. Two seats racing for the last spots: exactly one wins.',
      body: 'ReservationRequest',
      data: 'Reservation',
      status: 201,
      errors: ['missing_screen_ids', 'invalid_screen', 'invalid_date', 'capacity_unavailable', 'creative_not_found', 'validation_failed'],
      books: true,
      declares: (ctx) => {
        const screens = heldScreens(ctx)
        askLapses(store, ctx.now)
        return [askOf(screens, ctx.body.start_date, ctx.body.end_date, ctx.body.spots_per_day, undefined, holdMs)]
      },
      handler: (ctx) => {
        const seatId = ctx.principal!.seat!.seat_id
        const body = ctx.body
        const screens = heldScreens(ctx)
        // Holds past their time give their spots back before this one is counted.
        runCampaignJobs(store, outbox, ctx.now)
        const expires = ctx.now + holdMs
        const { claim, spots: total } = take(store, screens, body.start_date, body.end_date, body.spots_per_day, ctx.now, 'screen_ids', undefined, holdMs)
        const id = recordIdOf('rsv', claim)
        const r: ReservationRecord = { reservation_id: id, seat_id: seatId, status: 'held', screen_ids: body.screen_ids, start_date: body.start_date, end_date: body.end_date, spots_per_day: body.spots_per_day, total_spots: total, expires_at: iso(expires), expires_ms: expires, created_at: iso(ctx.now), claim }
        if (body.name !== undefined) r.name = body.name
        if (body.creative_id !== undefined) r.creative_id = body.creative_id
        putReservation(store, r)
        indexForSeat(store, 'reservation', seatId, ctx.now, id)
        outbox.append('reservation.held', `reservation:${id}`, { reservation_id: id, screen_ids: r.screen_ids, total_spots: total, expires_at: r.expires_at }, seatId)
        return ok(view(r), 201)
      }
    }),
    route<undefined, ListQuery>({
      ...common,
      method: 'get',
      path: '/openrtb/v2/reservations',
      summary: 'List the seat\'s reservations, newest first',
      querySchema: 'ListQuery',
      data: 'ReservationList',
      handler: (ctx) => {
        const { items, cursor } = seatPage(store, 'reservation', ctx.principal!.seat!.seat_id, ctx.q, (id) => {
          const r = store.reservations.get(id)
          return r !== undefined && r.status === 'held' && r.expires_ms <= ctx.now ? { ...r, status: 'expired' as const } : r
        }, view)
        return ok({ reservations: items, cursor })
      }
    }),
    route({
      ...common,
      method: 'get',
      path: '/openrtb/v2/reservations/:id',
      summary: 'A reservation: status and screens held',
      data: 'Reservation',
      errors: ['reservation_not_found', 'expired'],
      handler: (ctx) => ok(view(own(ctx.principal!.seat!.seat_id, ctx.params.id!, ctx.now)))
    }),
    route<ReservationConfirmRequest>({
      ...common,
      method: 'post',
      path: '/openrtb/v2/reservations/:id/confirm',
      summary: 'Convert a held reservation into a permanent placement',
      description: 'The held spots become an assignment of the approved creative (given here or when holding), which players pick up within PICKUP_SECONDS.',
      body: 'ReservationConfirmRequest',
      data: 'Reservation',
      errors: ['reservation_not_found', 'expired', 'invalid_transition', 'missing_creative_id', 'creative_not_found', 'validation_failed'],
      books: true,
      handler: (ctx) => {
        const seatId = ctx.principal!.seat!.seat_id
        const r = own(seatId, ctx.params.id!, ctx.now)
        if (r.status !== 'held') throw new ApiError('invalid_transition', `Reservation ${r.reservation_id} is ${r.status}.`, { status: r.status })
        const creativeId = ctx.body.creative_id ?? r.creative_id
        if (creativeId === undefined) throw new ApiError('missing_creative_id', 'Give the creative to place: creative_id.', { param: 'creative_id' })
        approvedCreative(store, seatId, creativeId)
        const screens = usableScreens(inventory, r.screen_ids)
        // The spots are already taken by the hold; the placement keeps them, under the hold's claim.
        keep(store, r.claim, ctx.now, `Reservation ${r.reservation_id}`)
        const a = place(deps, seatId, { creative_id: creativeId, screen_ids: r.screen_ids, start_date: r.start_date, end_date: r.end_date, spots_per_day: r.spots_per_day }, screens, ctx.now, `reservation:${r.reservation_id}`, { claim: r.claim })
        const next: ReservationRecord = { ...r, status: 'confirmed', creative_id: creativeId, assignment_id: a.assignment_id, confirmed_at: iso(ctx.now) }
        putReservation(store, next)
        outbox.append('reservation.confirmed', `reservation:${r.reservation_id}`, { reservation_id: r.reservation_id, assignment_id: a.assignment_id }, seatId)
        return ok(view(next))
      }
    }),
    route({
      ...common,
      method: 'delete',
      path: '/openrtb/v2/reservations/:id',
      summary: 'Release a held reservation',
      data: 'Reservation',
      errors: ['reservation_not_found', 'expired', 'invalid_transition'],
      books: true,
      handler: (ctx) => {
        const r = own(ctx.principal!.seat!.seat_id, ctx.params.id!, ctx.now)
        if (r.status !== 'held') throw new ApiError('invalid_transition', `Reservation ${r.reservation_id} is ${r.status}; only a held one can be released.`, { status: r.status })
        const given = give(store, { claim: r.claim, screen_ids: r.screen_ids, start_date: r.start_date, end_date: r.end_date, spots: r.spots_per_day }, 'release', ctx.now)
        if (!given.ok && given.reason === 'expired') throw new ApiError('expired', `Reservation ${r.reservation_id} expired at ${r.expires_at}; create a new one.`)
        if (!given.ok) throw new ApiError('invalid_transition', `Reservation ${r.reservation_id} no longer holds its spots (confirmed or released elsewhere).`, { status: r.status })
        const next: ReservationRecord = { ...r, status: 'released', released_at: iso(ctx.now) }
        putReservation(store, next)
        outbox.append('reservation.released', `reservation:${r.reservation_id}`, { reservation_id: r.reservation_id }, r.seat_id)
        return ok(view(next))
      }
    })
  ]
}
