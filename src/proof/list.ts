import { ApiError } from '../errors.js'
import { decodeCursor, encodeCursor } from '../http/cursor.js'
import { schemas } from '../generated/schemas.js'
import type { ProofRecord } from '../generated/types.js'
import type { Store } from '../store/store.js'

/** Verification tiers a proof can have (spec, Proof record), as schemas/proof/proof-record.json lists them. */
export const TIERS: ReadonlySet<string> = new Set(schemas.ProofRecord.properties.verification_tier.enum)

/** Which of a seat's proofs to list, as the list routes' queries name it (limit defaults to 100). */
export interface ProofFilter {
  screen_id?: string
  tier?: string
  limit?: number
  cursor?: string
}

/** 400 invalid_verification_tier for a tier that does not exist. */
export function checkTier (tier: string | undefined): void {
  if (tier !== undefined && !TIERS.has(tier)) throw new ApiError('invalid_verification_tier', `tier must be one of ${[...TIERS].join(', ')}.`, { param: 'tier' })
}

/** A page of a seat's proofs played in [from, to], oldest first, and the cursor of the next page. */
export function seatProofs (store: Store, seatId: string, from: number, to: number, f: ProofFilter): { proofs: ProofRecord[], cursor: { next: string | null, has_more: boolean } } {
  const seat = seatId.toLowerCase()
  let after: [string, number, string] | undefined = f.cursor !== undefined ? [seat, ...decodeCursor(f.cursor)] : undefined
  const proofs: ProofRecord[] = []
  let more = false
  for (const { key, value } of store.proofsBySeat.getRange({ start: after ?? [seat, from], end: [seat, to, '\uffff'], exclusiveStart: after !== undefined } as never)) {
    const p = store.proofs.get(value)
    if (p === undefined || (f.screen_id !== undefined && p.screenId !== f.screen_id) || (f.tier !== undefined && p.verification_tier !== f.tier)) continue
    if (proofs.length === (f.limit ?? 100)) { more = true; break }
    proofs.push(p)
    after = key as unknown as [string, number, string]
  }
  return { proofs, cursor: { next: more && after !== undefined ? encodeCursor(after[1], after[2]) : null, has_more: more } }
}
