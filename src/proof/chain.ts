import { createHash, randomBytes } from 'node:crypto'
import { iso } from '../clock.js'
import type { ProofRecord } from '../generated/types.js'
import type { FunnelLog } from '../events/funnel.js'
import type { Outbox } from '../store/outbox.js'
import type { Store } from '../store/store.js'
import type { ScreenRecord } from '../inventory/records.js'
import { judged, reportedRules } from './givt.js'
import type { ProofCommand, ProofDay, ProofVerdict, SignedFields } from './records.js'
import { PROOF_VERSION, proofPayload, type ProofSigner } from './signer.js'

/** The digest a screen's first proof chains from. */
export const GENESIS = '0'.repeat(64)

const DAY = 86_400_000

/** chain.digest of a proof: SHA-256 over the previous digest, the signed payload and the signature. */
export function chainDigest (prev: string, fields: SignedFields, signature: string): string {
  return createHash('sha256').update(`${prev}\n${proofPayload(fields)}\n${signature}`).digest('hex')
}

/** What placing a proof writes to besides the store: webhook events and the analytics log. */
export interface ProofEffects {
  store: Store
  outbox: Outbox
  funnel: FunnelLog
}

/** What signing a play needs as well. */
export interface ProofDeps extends ProofEffects {
  proofSigner: ProofSigner
}

/** What a proof records beyond the signed fields, its GIVT verdict and its place. */
export type ProofFacts = ProofCommand['facts']

/** How far back a device that was offline may report its plays (their original timestamps). */
export const OFFLINE_WINDOW_MS = 72 * 3_600_000

/**
 * The row of a seat's day counts a cluster's proof log keeps: every node applies every proof, so every node counts
 * them alike in this one row, never shipped. A node alone keys its row by its node id, ''; a cluster node, by its own
 * id, the repeats only it answered (repeatHere) and the proofs it signed before the log.
 */
const LOG_ROW = '*'

/**
 * Changes the seat's counts for the UTC day of a play, in the log's row (PlacedAt.log) or this node's own (a cluster's
 * nodes each count what only they saw, and the report sums a day's rows); call inside Store.write.
 */
function countDay (store: Store, seatId: string, timestamp: number, log: boolean, change: (counts: ProofDay) => void): void {
  const day: [string, number, string] = [seatId.toLowerCase(), Math.floor(timestamp / DAY) * DAY, log ? LOG_ROW : store.node]
  const counts = store.proofDays.get(day) ?? { tiers: {}, passed: 0, filtered: 0, reasons: {} }
  change(counts)
  if (log) store.share.ownCopy(store, () => store.proofDays.putSync(day, counts))
  else store.proofDays.putSync(day, counts)
}

/** Counts a repeated impression id filtered out (no second proof) in the seat's day of the play, for GIVT reporting. */
function countDuplicate (store: Store, seatId: string, timestamp: number, log: boolean): void {
  countDay(store, seatId, timestamp, log, (counts) => { counts.reasons.duplicate_impression = (counts.reasons.duplicate_impression ?? 0) + 1 })
}

/** What webhook events say of a proof. */
export function proofEventData (p: ProofRecord): Record<string, unknown> {
  return {
    proof_id: p.proof_id, impression_id: p.impressionId, ad_id: p.adId, screen_id: p.screenId, device_id: p.deviceId, timestamp: p.timestamp,
    verification_tier: p.verification_tier, duration_ms: p.duration_ms, completed: p.completed, givt_passed: p.givt.passed, signature: p.signature
  }
}

/**
 * A cluster node applied a proof another node shipped through the state bucket before the proof log: filed as where it
 * was signed, for reads. What the log placed stays the log's (a screen's head and places), and its repeats are decided
 * without these.
 */
export function proofApplied (store: Store, table: string, key: string): void {
  if (table !== 'proofs') return
  const proof = store.proofs.get(key)
  if (proof === undefined) return
  const head = store.proofHeads.get(proof.screenId)
  if (head === undefined || (head.log !== true && head.seq < proof.chain.seq)) store.proofHeads.putSync(proof.screenId, { seq: proof.chain.seq, digest: proof.chain.digest })
  if (store.proofChain.get([proof.screenId, proof.chain.seq]) === undefined) store.proofChain.putSync([proof.screenId, proof.chain.seq], proof.proof_id)
  fileForReads(store, proof)
}

/** Files a proof under its impression, its screen's plays in time (GIVT's burst) and its seat's proofs in time. */
function fileForReads (store: Store, proof: ProofRecord): void {
  store.proofByImpression.putSync(proof.impressionId, proof.proof_id)
  store.proofTimes.putSync([proof.screenId, proof.timestamp, proof.proof_id], proof.proof_id)
  if (proof.seat_id !== null) store.proofsBySeat.putSync([proof.seat_id.toLowerCase(), proof.timestamp, proof.proof_id], proof.proof_id)
}

/**
 * Signs a play for its proof (before its place: the signature covers the play, not where it falls in the chain), with
 * the GIVT rules judged where it was reported. partnerId: a partner's impression callback reported it.
 */
export function signPlay (store: Store, signer: ProofSigner, screen: ScreenRecord, fields: SignedFields, facts: ProofFacts, slotSeconds: number, partnerId?: string): ProofCommand {
  const head = store.proofHeads.get(fields.screenId)
  return {
    proof_id: `prf_${randomBytes(12).toString('hex')}`,
    fields,
    signature: signer.sign(fields),
    facts,
    slot_seconds: slotSeconds,
    reported: reportedRules(screen, { timestamp: fields.timestamp, durationMs: facts.duration_ms, completed: facts.completed, slotSeconds }),
    ...(partnerId !== undefined ? { partner_id: partnerId } : {}),
    ...(head !== undefined ? { base: { seq: head.seq, digest: head.digest } } : {})
  }
}

/** Where a proof is placed: in log time, on the node that proposed it (mine) or another, by a log or a node alone. */
export interface PlacedAt {
  logTime: number
  /** This node proposed it: the effects that happen once cluster-wide (webhooks, analytics events) are its. */
  mine: boolean
  /** A cluster's proof log places it: a screen's head is the log's, not what this node held before the log. */
  log: boolean
}

/** The partner's impressions reported for the UTC day of a play, this one included: the same count on every node. */
function countPartnerDay (store: Store, partnerId: string, at: number): number {
  const key = `partner-impressions:${partnerId}:${new Date(at).toISOString().slice(0, 10)}`
  const n = ((store.meta.get(key) as number | undefined) ?? 0) + 1
  store.meta.putSync(key, n)
  return n
}

/**
 * Whether a repeat of a proven play reconciles a partner's report with the service's own: a partner's callback for a
 * play the service proved (its player or VAST reported it), or the service's play of one a partner's callback proved
 * first, the first time either happens.
 */
function reconciles (store: Store, c: ProofCommand, first: ProofRecord): boolean {
  if (store.meta.get(`reconciled:${first.proof_id}`) !== undefined) return false
  const byCallback = first.verification_tier === 'impression_callback'
  return c.partner_id !== undefined ? !byCallback : byCallback
}

/**
 * A play whose impression id has a proof already: no second proof. Reconciled (reconciles) the first time the
 * partner's report and the service's own meet: impression.delivered, reconciled: true, for a partner's callback, and
 * impression.verified for the service's play. Any other repeat of a partner's is a duplicate impression id, filtered
 * and counted for the seat's GIVT report.
 */
function repeated ({ store, outbox }: ProofEffects, c: ProofCommand, first: ProofRecord, at: PlacedAt): void {
  if (reconciles(store, c, first)) {
    store.meta.putSync(`reconciled:${first.proof_id}`, c.partner_id ?? 'service')
    if (c.partner_id === undefined) {
      if (at.mine) outbox.append('impression.verified', `proof:${first.proof_id}`, proofEventData(first), first.seat_id ?? undefined)
      return
    }
    const today = countPartnerDay(store, c.partner_id, c.fields.timestamp)
    if (at.mine) outbox.append('impression.delivered', `proof:${first.proof_id}`, { ...proofEventData(first), partner_id: c.partner_id, reconciled: true, partner_impressions_today: today }, first.seat_id ?? undefined)
    return
  }
  if (c.partner_id !== undefined && first.seat_id !== null) countDuplicate(store, first.seat_id, first.timestamp, at.log)
}

/**
 * A cluster node's answer, from its own rows, to a partner sending a play the proof log placed already, with nothing
 * to reconcile: the log would answer the same (an impression id it placed stays placed), so nothing is appended to a
 * log that is kept whole. undefined: the play goes to the log.
 */
export function repeatHere (effects: ProofEffects, c: ProofCommand): ProofVerdict | undefined {
  const { store } = effects
  const known = store.loggedImpressions.get(c.fields.impressionId)
  const first = known !== undefined ? store.proofs.get(known) : undefined
  if (known === undefined || first === undefined || reconciles(store, c, first)) return undefined
  if (first.screenId !== c.fields.screenId) return { status: 'taken' }
  repeated(effects, c, first, { logTime: Date.now(), mine: true, log: false })
  return { status: 'duplicate', proof_id: known }
}

/**
 * Places a signed play in its screen's chain, or answers why not: the one rule for a node alone (inside the request's
 * transaction) and for a cluster's proof log (its apply, on every node, in the log's order, which makes each chain one
 * line whoever proposed). An impression id proves once; a play older than the offline window is refused. Every node
 * writes the proof and its indexes alike; only the proposer's writes what must happen once cluster-wide.
 */
export function placeProof (effects: ProofEffects, c: ProofCommand, at: PlacedAt): ProofVerdict {
  const { store, outbox, funnel } = effects
  const fields = c.fields
  // A log decides repeats from what it placed alone: proofs from before it are not on every node.
  const known = (at.log ? store.loggedImpressions : store.proofByImpression).get(fields.impressionId)
  if (known !== undefined) {
    const first = store.proofs.get(known)
    if (first !== undefined && first.screenId !== fields.screenId) return { status: 'taken' }
    if (first !== undefined) repeated(effects, c, first, at)
    return { status: 'duplicate', proof_id: known }
  }
  if (fields.timestamp < at.logTime - OFFLINE_WINDOW_MS) return { status: 'too_old' }
  const stored = store.proofHeads.get(fields.screenId)
  // The first proof a log places on a screen chains from its proposer's head, which every node adopts from the entry:
  // what the nodes held before the log may differ.
  const head = !at.log || stored?.log === true ? stored : c.base
  const prev = head?.digest ?? GENESIS
  const proof: ProofRecord = {
    proof_id: c.proof_id,
    version: PROOF_VERSION,
    signature: c.signature,
    ...fields,
    ...c.facts,
    givt: judged(store, fields.screenId, { timestamp: fields.timestamp, slotSeconds: c.slot_seconds }, c.reported),
    chain: { seq: (head?.seq ?? 0) + 1, prev_digest: prev, digest: chainDigest(prev, fields, c.signature) },
    recorded_at: iso(at.logTime)
  }
  // Every node's own copy: the log places it on each.
  store.share.ownCopy(store, () => store.proofs.putSync(proof.proof_id, proof))
  if (at.log) store.loggedImpressions.putSync(proof.impressionId, proof.proof_id)
  store.proofHeads.putSync(proof.screenId, { seq: proof.chain.seq, digest: proof.chain.digest, ...(at.log ? { log: true as const } : {}) })
  store.proofChain.putSync([proof.screenId, proof.chain.seq], proof.proof_id)
  fileForReads(store, proof)
  const partnerToday = c.partner_id !== undefined ? countPartnerDay(store, c.partner_id, fields.timestamp) : undefined
  if (proof.seat_id !== null) {
    countDay(store, proof.seat_id, fields.timestamp, at.log, (counts) => {
      counts.tiers[proof.verification_tier] = (counts.tiers[proof.verification_tier] ?? 0) + 1
      if (proof.givt.passed) counts.passed++
      else counts.filtered++
      for (const r of proof.givt.reasons) counts.reasons[r] = (counts.reasons[r] ?? 0) + 1
    })
  }
  if (!at.mine) return { status: 'accepted', proof_id: proof.proof_id, givt: proof.givt }
  funnel.append({
    stage: 'proof', at: fields.timestamp, screens: [fields.screenId], tier: proof.verification_tier, proof_id: proof.proof_id, impression_id: fields.impressionId, ad_id: fields.adId,
    device_id: fields.deviceId, duration_ms: proof.duration_ms, completed: proof.completed, givt_passed: proof.givt.passed, ...(proof.seat_id !== null ? { seat_id: proof.seat_id } : {})
  })
  if (c.partner_id !== undefined) outbox.append('impression.delivered', `proof:${proof.proof_id}`, { ...proofEventData(proof), partner_id: c.partner_id, reconciled: false, partner_impressions_today: partnerToday }, proof.seat_id ?? undefined)
  else outbox.append('impression.verified', `proof:${proof.proof_id}`, proofEventData(proof), proof.seat_id ?? undefined)
  return { status: 'accepted', proof_id: proof.proof_id, givt: proof.givt }
}
