import { ApiError } from '../errors.js'
import type { ProofRecord } from '../generated/types.js'
import type { Store } from '../store/store.js'

/** Verification tiers a proof can have (spec, Proof record). */
export const TIERS: ReadonlySet<string> = new Set(['signed', 'event_confirmed', 'impression_callback'])

/** Which of a seat's proofs to list. */
export interface ProofFilter {
  from: number
  to: number
  screenId?: string
  tier?: string
  limit: number
  cursor?: string
}

/** 400 invalid_verification_tier for a tier that does not exist. */
export function checkTier (tier: string | undefined): void {
  if (tier !== undefined && !TIERS.has(tier)) throw new ApiError('invalid_verification_tier', `tier must be one of ${[...TIERS].join(', ')}.`, { param: 'tier' })
}

/** A page of a seat's proofs played in [from, to], oldest first, and the cursor of the next page. */
export function seatProofs (store: Store, seatId: string, f: ProofFilter): { proofs: ProofRecord[], cursor: { next: string | null, has_more: boolean } } {
  const seat = seatId.toLowerCase()
  let after: [string, number, string] | undefined
  if (f.cursor !== undefined) {
    const [ts, id] = (() => { try { return JSON.parse(Buffer.from(f.cursor, 'base64url').toString()) as unknown[] } catch { return [] } })()
    if (typeof ts !== 'number' || typeof id !== 'string') throw new ApiError('invalid_parameter', 'cursor is not valid.', { param: 'cursor' })
    after = [seat, ts, id]
  }
  const proofs: ProofRecord[] = []
  let more = false
  for (const { key, value } of store.proofsBySeat.getRange({ start: after ?? [seat, f.from], end: [seat, f.to, '\uffff'], exclusiveStart: after !== undefined } as never)) {
    const p = store.proofs.get(value)
    if (p === undefined || (f.screenId !== undefined && p.screenId !== f.screenId) || (f.tier !== undefined && p.verification_tier !== f.tier)) continue
    if (proofs.length === f.limit) { more = true; break }
    proofs.push(p)
    after = key as unknown as [string, number, string]
  }
  return { proofs, cursor: { next: more && after !== undefined ? Buffer.from(JSON.stringify([after[1], after[2]])).toString('base64url') : null, has_more: more } }
}
