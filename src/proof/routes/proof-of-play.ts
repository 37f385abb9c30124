import type { Deps } from '../../deps.js'
import { ApiError } from '../../errors.js'
import type { ProofOfPlayQuery, ProofOfPlayReport } from '../../generated/types.js'
import { ok, route, type RouteDef } from '../../http/route.js'
import { checkTier, seatProofs, TIERS } from '../list.js'

const DAY = 86_400_000
const MAX_DAYS = 90

/** GET /openrtb/v2/proof-of-play (spec): the seat's proofs in a date window, counted per tier with the GIVT pass rate. */
export function proofOfPlayRoute ({ store, proofSigner }: Deps): RouteDef {
  return route<undefined, ProofOfPlayQuery>({
    method: 'get',
    path: '/openrtb/v2/proof-of-play',
    summary: 'Proofs of play in a window: counts per verification tier, GIVT pass rate, and the records',
    description: 'Counts come from per-day counters kept with every proof, so they are exact and immediate; records are the seat\'s own, oldest first, each verifiable offline with public_key.',
    tag: 'Reporting',
    envelope: 'flat',
    auth: 'seat',
    scope: 'proof:read',
    rateGroup: 'reporting',
    querySchema: 'ProofOfPlayQuery',
    data: 'ProofOfPlayReport',
    errors: ['invalid_verification_tier', 'invalid_date'],
    handler: (ctx) => {
      const q = ctx.q
      checkTier(q.tier)
      const from = Date.parse(`${q.start_date}T00:00:00Z`)
      const last = Date.parse(`${q.end_date}T00:00:00Z`)
      if (last < from) throw new ApiError('invalid_date', 'end_date is before start_date.', { param: 'end_date' })
      if (last - from >= MAX_DAYS * DAY) throw new ApiError('invalid_date', `The window is at most ${MAX_DAYS} days.`, { param: 'end_date' })
      const seat = ctx.principal!.seat!.seat_id
      const counts: ProofOfPlayReport['counts'] = { total: 0, signed: 0, event_confirmed: 0, impression_callback: 0 }
      const givt: ProofOfPlayReport['givt'] = { passed: 0, filtered: 0, pass_rate: null, reasons: {} }
      for (const { value } of store.proofDays.getRange({ start: [seat.toLowerCase(), from], end: [seat.toLowerCase(), last + 1] } as never)) {
        for (const tier of TIERS) {
          const n = value.tiers[tier] ?? 0
          counts[tier as 'signed'] += n
          counts.total += n
        }
        givt.passed += value.passed
        givt.filtered += value.filtered
        for (const [r, n] of Object.entries(value.reasons)) givt.reasons[r] = (givt.reasons[r] ?? 0) + n
      }
      if (counts.total > 0) givt.pass_rate = Math.round((givt.passed / counts.total) * 10_000) / 10_000
      const page = seatProofs(store, seat, from, last + DAY - 1, q)
      return ok({ start_date: q.start_date, end_date: q.end_date, counts, givt, ...page, public_key: proofSigner.publicKeyHex })
    }
  })
}
