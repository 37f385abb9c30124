/**
 * Names that must be unique across a cluster (a seat_id, a partner slug), claimed in the engine before the write that
 * makes them: one winner however many nodes try at once (a KV create). A claim lapses after CLAIM_TTL_MS, by when the
 * row that took the name is on every node and the owner's own check refuses it again.
 */
export interface UniqueNames {
  /**
   * True when this request won the name, or holds it already, or took it over from a holder older than
   * takeOverAfterMs (owner: the request's fingerprint, so a retry of a request
   * whose claim landed after its answer was lost finds it its own); false when another holds it; throws 503 when the
   * engine cannot say.
   */
  claim (name: string, owner: string, takeOverAfterMs?: number): Promise<boolean>
  /** Gives a won name back (the write that claimed it did not commit). */
  release (name: string): void
}

/** How long a claim outlives its request: far longer than a row takes to reach every node. */
export const CLAIM_TTL_MS = 600_000

/** The claims bucket's key for a name: letters, digits and `-_=.` only, as KV keys allow. */
export function claimKey (name: string): string {
  return `name.${Buffer.from(name).toString('base64url')}`
}

/** A claim's value: when it was made (ms) and its owner. */
export function claimValue (owner: string, at: number): Uint8Array {
  return new TextEncoder().encode(`${at} ${owner}`)
}

/** claimValue's inverse; undefined for a value it did not write. */
export function parseClaim (text: string): { owner: string, at: number } | undefined {
  const space = text.indexOf(' ')
  const at = Number(text.slice(0, space))
  return space > 0 && Number.isFinite(at) ? { owner: text.slice(space + 1), at } : undefined
}
