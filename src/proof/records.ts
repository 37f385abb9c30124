// Proof of play's storage shapes beside the signed proofs themselves (ProofRecord, from schemas/): what the store's
// proof tables hold. The store opens the tables declared here, and nothing here reads the store.
import { table } from '../store/table.js'
import type { ProofRecord } from '../generated/types.js'

/** A GIVT rule that fired. */
export type GivtReason = ProofRecord['givt']['reasons'][number]

/** The six signed fields of a proof (spec, Proof record), less its version. */
export type SignedFields = Pick<ProofRecord, 'timestamp' | 'adId' | 'impressionId' | 'screenId' | 'deviceId'>

/** A screen's chain head: the last proof's sequence number and digest. */
export interface ChainHead {
  seq: number
  digest: string
  /** Placed by a cluster's proof log (src/proof/proof-log.ts), the same on every node; else this node's own. */
  log?: true
}

/**
 * A signed play waiting for its place in its screen's chain (placeProof): a node alone places it at once, a cluster
 * node proposes it to the proof log, whose order places it.
 */
export interface ProofCommand {
  proof_id: string
  fields: SignedFields
  signature: string
  facts: Pick<ProofRecord, 'verification_tier' | 'seat_id' | 'creative_id' | 'spot_id' | 'duration_ms' | 'completed'>
  slot_seconds: number
  /** The GIVT rules that fired where the play was reported (the burst rule is judged at its place). */
  reported: GivtReason[]
  /** The partner whose impression callback reported it. */
  partner_id?: string
  /** The proposer's head of the screen's chain: where a log that has placed none of the screen's proofs chains from. */
  base?: ChainHead
}

/**
 * Where a play went: placed (its proof), a repeat of a proven impression id (the first proof), an impression id
 * proven on another screen, or a play older than the offline window.
 */
export type ProofVerdict =
  | { status: 'accepted', proof_id: string, givt: ProofRecord['givt'] }
  | { status: 'duplicate', proof_id: string }
  | { status: 'taken' }
  | { status: 'too_old' }

/** A seat's proofs of one UTC day: per tier, and how many passed GIVT or which rule filtered them. */
export interface ProofDay {
  tiers: Record<string, number>
  passed: number
  filtered: number
  reasons: Record<string, number>
}

/** The proof-of-play domain's tables (src/store/tables.ts). */
export const proofTables = {
  /**
   * proof_id -> a signed proof of play. A cluster's proof log writes each node's copy (src/proof/proof-log.ts); the
   * proofs nodes signed before the log came through the state bucket, and still reach a node that joins late.
   */
  proofs: table<ProofRecord>({ name: 'proofs', shapes: true, replication: 'quorum', owners: ['src/proof/'] }),
  /**
   * impressionId -> proof_id, of the proofs a cluster's proof log placed: what its apply finds repeats by, so that a
   * node that joined late, or holds proofs from before the log that another node lacks, decides alike.
   */
  loggedImpressions: table<string>({ name: 'logged_impressions', replication: 'local', owners: ['src/proof/'] }),
  /**
   * proof_id -> a play this cluster node proposed to the proof log and has not seen placed (its verdict applied here),
   * proposed again until it is: a play billed in its request's transaction is proved even when that request's
   * proposal was lost (the node stopped, the engine was away, the entry landed too late to count).
   */
  pendingProofs: table<{ command: ProofCommand, at: number }>({ name: 'pending_proofs', replication: 'local', owners: ['src/proof/'] }),
  /** screen_id -> the last proof of the screen's hash chain. */
  proofHeads: table<ChainHead>({ name: 'proof_heads', replication: 'local', owners: ['src/proof/'] }),
  /** [screen_id, seq] -> proof_id: each screen's chain in order. */
  proofChain: table<string, [string, number]>({ name: 'proof_chain', ordered: true, replication: 'local', owners: ['src/proof/'] }),
  /** impressionId -> proof_id: one proof per impression. */
  proofByImpression: table<string>({ name: 'proof_by_impression', replication: 'local', owners: ['src/proof/'] }),
  /** [screen_id, timestamp, proof_id] -> proof_id: a screen's plays in time order (GIVT burst checks). */
  proofTimes: table<string, [string, number, string]>({ name: 'proof_times', ordered: true, replication: 'local', owners: ['src/proof/'] }),
  /**
   * [seat_id lower-cased, UTC day ms, row] -> that day's proofs per tier and GIVT outcome: a cluster's proof log's row
   * ('*', the same on every node, never shipped), or the row of the node that counted them (a node alone, a cluster
   * node's own repeats, proofs signed before the log); rows an earlier version wrote have no row. A report sums a day's
   * rows.
   */
  proofDays: table<ProofDay, [string, number, string] | [string, number]>({ name: 'proof_days', ordered: true, replication: 'quorum', owners: ['src/proof/'] }),
  /** [seat_id lower-cased, timestamp, proof_id] -> proof_id: a buyer's proofs in time order. */
  proofsBySeat: table<string, [string, number, string]>({ name: 'proofs_by_seat', ordered: true, replication: 'local', owners: ['src/proof/'] })
}
