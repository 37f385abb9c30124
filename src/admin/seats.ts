import { iso } from '../clock.js'
import { ApiError } from '../errors.js'
import type { AdminSeat, RateLimitsRequest, SeatActionRequest, SeatStatus } from '../generated/types.js'
import { pageOf } from '../http/cursor.js'
import { ok, route, type RouteDef } from '../http/route.js'
import type { SeatRecord } from '../accounts/records.js'
import type { Deps } from '../deps.js'
import { pageQuery, pageParams } from './paging.js'
import { saveSeat, seatRecord } from '../accounts/seats.js'
import { seatKeyIds } from '../auth/keys.js'
import type { Store } from '../store/store.js'

type SeatAction = 'approve' | 'suspend' | 'reinstate' | 'revoke'

/**
 * Seat state moves (spec, Seat status; the spec leaves the conditions to the operator). revoked is final, and a
 * suspended seat returns to the status it had before.
 */
const MOVES: Record<SeatAction, { from: SeatStatus[], to: (seat: SeatRecord) => SeatStatus }> = {
  approve: { from: ['sandbox'], to: () => 'approved' },
  suspend: { from: ['sandbox', 'approved'], to: () => 'suspended' },
  reinstate: { from: ['suspended'], to: (seat) => seat.suspended_from ?? 'sandbox' },
  revoke: { from: ['sandbox', 'approved', 'suspended'], to: () => 'revoked' }
}

/** The operator's view of a seat: contacts shown, callback URLs only as booleans. */
export function adminSeatView (store: Pick<Store, 'seatKeys'>, seat: SeatRecord): AdminSeat {
  return {
    id: seat.id,
    seat_id: seat.seat_id,
    company_name: seat.company_name,
    status: seat.status,
    openrtb_version: seat.openrtb_version,
    created_at: seat.created_at,
    updated_at: seat.updated_at,
    contact_email: seat.contact_email,
    billing_email: seat.billing_email,
    has_notification_url: seat.notification_url !== undefined,
    has_webhook_url: seat.webhook_url !== undefined,
    rate_limits: seat.rate_limits,
    key_ids: seatKeyIds(store, seat.seat_id)
  }
}

/** Operator routes over seats: list, read, state moves and custom rate limits, each audited. */
export function adminSeatRoutes ({ store, outbox }: Deps): RouteDef[] {
  const load = (seatId: string): SeatRecord => {
    const seat = store.seats.get(seatId.toLowerCase())
    if (seat === undefined) throw new ApiError('seat_not_found', `No seat ${seatId}.`, { param: 'seat_id' })
    return seat
  }
  const common = { tag: 'Operator', envelope: 'flat', auth: 'admin', rateGroup: 'ops' } as const

  const action = (name: SeatAction): RouteDef => route<SeatActionRequest>({
    ...common,
    method: 'post',
    path: `/admin/v1/seats/:seat_id/${name}`,
    summary: `${name[0]!.toUpperCase()}${name.slice(1)} a seat`,
    description: `Allowed from ${MOVES[name].from.join(', ')}; otherwise 409 invalid_transition. Audited as audit.seat.${name === 'approve' ? 'approved' : name === 'suspend' ? 'suspended' : name === 'reinstate' ? 'reinstated' : 'revoked'}.${name === 'approve' ? ' Approval moves the seat to production limits and its bids into the live auction.' : ''}`,
    body: 'SeatActionRequest',
    data: 'AdminSeat',
    errors: ['seat_not_found', 'invalid_transition'],
    exclusive: (ctx) => seatRecord(ctx.params.seat_id!),
    handler: (ctx) => {
      const seat = load(ctx.params.seat_id!)
      const move = MOVES[name]
      if (!move.from.includes(seat.status)) {
        throw new ApiError('invalid_transition', `Cannot ${name} a seat that is ${seat.status}.`, { status: seat.status })
      }
      const to = move.to(seat)
      const next: SeatRecord = { ...seat, status: to, updated_at: iso(ctx.now) }
      if (name === 'suspend') next.suspended_from = seat.status
      else delete next.suspended_from
      saveSeat(store, next)
      const past = { approve: 'approved', suspend: 'suspended', reinstate: 'reinstated', revoke: 'revoked' }[name]
      outbox.append(`audit.seat.${past}`, `seat:${seat.seat_id}`, { actor: 'operator', from: seat.status, to, reason: ctx.body.reason ?? null }, seat.seat_id)
      return ok(adminSeatView(store, next))
    }
  })

  return [
    route({
      ...common,
      method: 'get',
      path: '/admin/v1/seats',
      summary: 'List seats',
      query: [{ name: 'status', description: 'Only seats in this status.', schema: { $ref: 'seat-status.json' } }, ...pageQuery],
      data: 'SeatList',
      handler: (ctx) => {
        const status = ctx.query.get('status')
        if (status !== null && !['sandbox', 'approved', 'suspended', 'revoked'].includes(status)) throw new ApiError('invalid_parameter', 'status must be sandbox, approved, suspended or revoked.', { param: 'status' })
        const { limit, after } = pageParams(ctx.query)
        const entries = store.seats.getRange(after !== undefined ? { start: after, exclusiveStart: true } : {})
        const page = pageOf(entries, limit, (seat) => status !== null && seat.status !== status ? undefined : seat, (key) => Buffer.from(key).toString('base64url'))
        return ok({ seats: page.items.map((seat) => adminSeatView(store, seat)), cursor: page.cursor })
      }
    }),
    route({
      ...common,
      method: 'get',
      path: '/admin/v1/seats/:seat_id',
      summary: 'Read a seat',
      data: 'AdminSeat',
      errors: ['seat_not_found'],
      handler: (ctx) => ok(adminSeatView(store, load(ctx.params.seat_id!)))
    }),
    action('approve'),
    action('suspend'),
    action('reinstate'),
    action('revoke'),
    route<RateLimitsRequest>({
      ...common,
      method: 'put',
      path: '/admin/v1/seats/:seat_id/rate-limits',
      summary: 'Set custom rate limits for a seat',
      description: 'Merges per-group limits (requests per group window) into the seat\'s custom limits; null clears a group back to the default. Audited as audit.seat.rate_limits_changed.',
      body: 'RateLimitsRequest',
      data: 'AdminSeat',
      errors: ['seat_not_found'],
      exclusive: (ctx) => seatRecord(ctx.params.seat_id!),
      handler: (ctx) => {
        const seat = load(ctx.params.seat_id!)
        const limits = { ...seat.rate_limits }
        for (const [group, value] of Object.entries(ctx.body.limits)) {
          if (value === null || value === undefined) delete (limits as Record<string, unknown>)[group]
          else (limits as Record<string, number>)[group] = value
        }
        const next = { ...seat, rate_limits: limits, updated_at: iso(ctx.now) }
        saveSeat(store, next)
        outbox.append('audit.seat.rate_limits_changed', `seat:${seat.seat_id}`, { actor: 'operator', before: seat.rate_limits, after: limits, reason: ctx.body.reason ?? null }, seat.seat_id)
        return ok(adminSeatView(store, next))
      }
    })
  ]
}
