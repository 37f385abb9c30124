// Proof of play's storage shapes beside the signed proofs themselves (ProofRecord, from schemas/): what the store's
// proof tables hold. The store opens the tables declared here, and nothing here reads the store.
import { table } from '../store/table.js'
import type { ProofRecord } from '../generated/types.js'

/** A screen's chain head: the last proof's sequence number and digest. */
export interface ChainHead {
  seq: number
  digest: string
}

/** A seat's proofs of one UTC day: per tier, and how many passed GIVT or which rule filtered them. */
export interface ProofDay {
  tiers: Record<string, number>
  passed: number
  filtered: number
  reasons: Record<string, number>
}

/** The proof-of-play domain's tables (src/store/tables.ts). */
export const proofTables = {
  /** proof_id -> a signed proof of play. */
  proofs: table<ProofRecord>({ name: 'proofs', shapes: true, replication: 'quorum', owners: ['src/proof/'] }),
  /** screen_id -> the last proof of the screen's hash chain. */
  proofHeads: table<ChainHead>({ name: 'proof_heads', replication: 'local', owners: ['src/proof/'] }),
  /** [screen_id, seq] -> proof_id: each screen's chain in order. */
  proofChain: table<string, [string, number]>({ name: 'proof_chain', ordered: true, replication: 'local', owners: ['src/proof/'] }),
  /** impressionId -> proof_id: one proof per impression. */
  proofByImpression: table<string>({ name: 'proof_by_impression', replication: 'local', owners: ['src/proof/'] }),
  /** [screen_id, timestamp, proof_id] -> proof_id: a screen's plays in time order (GIVT burst checks). */
  proofTimes: table<string, [string, number, string]>({ name: 'proof_times', ordered: true, replication: 'local', owners: ['src/proof/'] }),
  /**
   * [seat_id lower-cased, UTC day ms, node id] -> that day's proofs per tier and GIVT outcome the node signed; rows an
   * earlier version wrote have no node. A report sums a day's rows.
   */
  proofDays: table<ProofDay, [string, number, string] | [string, number]>({ name: 'proof_days', ordered: true, replication: 'quorum', owners: ['src/proof/'] }),
  /** [seat_id lower-cased, timestamp, proof_id] -> proof_id: a buyer's proofs in time order. */
  proofsBySeat: table<string, [string, number, string]>({ name: 'proofs_by_seat', ordered: true, replication: 'local', owners: ['src/proof/'] })
}
