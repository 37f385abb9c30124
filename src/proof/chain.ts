import { createHash, randomBytes } from 'node:crypto'
import { iso } from '../clock.js'
import type { ProofRecord } from '../generated/types.js'
import type { FunnelLog } from '../events/funnel.js'
import type { Outbox } from '../store/outbox.js'
import type { Store } from '../store/store.js'
import type { ProofDay } from './records.js'
import { PROOF_VERSION, proofPayload, type ProofSigner, type SignedFields } from './signer.js'

/** The digest a screen's first proof chains from. */
export const GENESIS = '0'.repeat(64)

const DAY = 86_400_000

/** chain.digest of a proof: SHA-256 over the previous digest, the signed payload and the signature. */
export function chainDigest (prev: string, fields: SignedFields, signature: string): string {
  return createHash('sha256').update(`${prev}\n${proofPayload(fields)}\n${signature}`).digest('hex')
}

/** What issuing a proof writes to: the store, the signing key, webhook events and the analytics log. */
export interface ProofDeps {
  store: Store
  proofSigner: ProofSigner
  outbox: Outbox
  funnel: FunnelLog
}

/** What a proof records beyond the signed fields. */
export type ProofFacts = Pick<ProofRecord, 'verification_tier' | 'seat_id' | 'creative_id' | 'spot_id' | 'duration_ms' | 'completed' | 'givt'>

/**
 * Changes the seat's counts for the UTC day of a play, this node's row of them (a cluster's nodes each count their own
 * proofs, and the report sums the rows: one row rewritten by every node would lose counts); call inside Store.write.
 */
function countDay (store: Store, seatId: string, timestamp: number, change: (counts: ProofDay) => void): void {
  const day: [string, number, string] = [seatId.toLowerCase(), Math.floor(timestamp / DAY) * DAY, store.node]
  const counts = store.proofDays.get(day) ?? { tiers: {}, passed: 0, filtered: 0, reasons: {} }
  change(counts)
  store.proofDays.putSync(day, counts)
}

/** Counts a repeated impression id filtered out (no second proof) in the seat's day of the play, for GIVT reporting. */
export function countDuplicate (store: Store, seatId: string, timestamp: number): void {
  countDay(store, seatId, timestamp, (counts) => { counts.reasons.duplicate_impression = (counts.reasons.duplicate_impression ?? 0) + 1 })
}

/** What webhook events say of a proof. */
export function proofEventData (p: ProofRecord): Record<string, unknown> {
  return {
    proof_id: p.proof_id, impression_id: p.impressionId, ad_id: p.adId, screen_id: p.screenId, device_id: p.deviceId, timestamp: p.timestamp,
    verification_tier: p.verification_tier, duration_ms: p.duration_ms, completed: p.completed, givt_passed: p.givt.passed, signature: p.signature
  }
}

/**
 * Files a proof under its screen's chain (and moves the chain's head when it is the newest), its impression, its
 * screen's plays in time and its seat's proofs: what every node derives from a proof, whichever node signed it.
 */
function indexProof (store: Store, proof: ProofRecord): void {
  const head = store.proofHeads.get(proof.screenId)
  if (head === undefined || head.seq < proof.chain.seq) store.proofHeads.putSync(proof.screenId, { seq: proof.chain.seq, digest: proof.chain.digest })
  store.proofChain.putSync([proof.screenId, proof.chain.seq], proof.proof_id)
  store.proofByImpression.putSync(proof.impressionId, proof.proof_id)
  store.proofTimes.putSync([proof.screenId, proof.timestamp, proof.proof_id], proof.proof_id)
  if (proof.seat_id !== null) store.proofsBySeat.putSync([proof.seat_id.toLowerCase(), proof.timestamp, proof.proof_id], proof.proof_id)
}

/**
 * A cluster node applied another node's row (src/cluster/applier.ts): a proof is filed as where it was signed. Proofs
 * are replicated, their indexes derived, so that a play costs the engine one row and its day count, not six.
 */
export function proofApplied (store: Store, table: string, key: string): void {
  if (table !== 'proofs') return
  const proof = store.proofs.get(key)
  if (proof !== undefined) indexProof(store, proof)
}

/**
 * Signs a play and appends it to its screen's chain, inside the caller's write transaction (the play and its proof
 * commit together). The chain is in the order proofs were recorded (a device's offline plays arrive late, with their
 * own timestamps). Indexed by impression (idempotency), by screen and sequence (the chain), by screen and time (GIVT)
 * and by seat and time (a buyer's list), with the seat's day counts beside it so that the proof-of-play report
 * never scans proofs to count them.
 */
export function issueProof ({ store, proofSigner: signer, outbox, funnel }: ProofDeps, fields: SignedFields, facts: ProofFacts, now: number): ProofRecord {
  const head = store.proofHeads.get(fields.screenId)
  const prev = head?.digest ?? GENESIS
  const signature = signer.sign(fields)
  const proof: ProofRecord = {
    proof_id: `prf_${randomBytes(12).toString('hex')}`,
    version: PROOF_VERSION,
    signature,
    ...fields,
    ...facts,
    chain: { seq: (head?.seq ?? 0) + 1, prev_digest: prev, digest: chainDigest(prev, fields, signature) },
    recorded_at: iso(now)
  }
  store.proofs.putSync(proof.proof_id, proof)
  indexProof(store, proof)
  if (proof.seat_id !== null) {
    countDay(store, proof.seat_id, fields.timestamp, (counts) => {
      counts.tiers[proof.verification_tier] = (counts.tiers[proof.verification_tier] ?? 0) + 1
      if (proof.givt.passed) counts.passed++
      else counts.filtered++
      for (const r of proof.givt.reasons) counts.reasons[r] = (counts.reasons[r] ?? 0) + 1
    })
  }
  funnel.append({
    stage: 'proof', at: fields.timestamp, screens: [fields.screenId], tier: proof.verification_tier, proof_id: proof.proof_id, impression_id: fields.impressionId, ad_id: fields.adId,
    device_id: fields.deviceId, duration_ms: proof.duration_ms, completed: proof.completed, givt_passed: proof.givt.passed, ...(proof.seat_id !== null ? { seat_id: proof.seat_id } : {})
  })
  // A play the service saw itself is verified now; a partner's callback is announced by the intake, which knows the partner.
  if (proof.verification_tier !== 'impression_callback') outbox.append('impression.verified', `proof:${proof.proof_id}`, proofEventData(proof), proof.seat_id ?? undefined)
  return proof
}
