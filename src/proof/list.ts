import { ApiError } from '../errors.js'
import { cursorOfKey, decodeCursor, pageOf, type Page } from '../http/cursor.js'
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
export function seatProofs (store: Store, seatId: string, from: number, to: number, f: ProofFilter): { proofs: ProofRecord[], cursor: Page<ProofRecord>['cursor'] } {
  const seat = seatId.toLowerCase()
  const after: [string, number, string] | undefined = f.cursor !== undefined ? [seat, ...decodeCursor(f.cursor)] : undefined
  const entries = store.proofsBySeat.getRange({ start: after ?? [seat, from], end: [seat, to, '\uffff'], exclusiveStart: after !== undefined } as never)
  const page = pageOf(entries, f.limit ?? 100, (id) => {
    const p = store.proofs.get(id)
    return p === undefined || (f.screen_id !== undefined && p.screenId !== f.screen_id) || (f.tier !== undefined && p.verification_tier !== f.tier) ? undefined : p
  }, cursorOfKey)
  return { proofs: page.items, cursor: page.cursor }
}
