// Proof of play's storage shapes beside the signed proofs themselves (ProofRecord, from schemas/): what the store's
// proof tables hold. A leaf: the store reads these types, and nothing here reads the store.

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
