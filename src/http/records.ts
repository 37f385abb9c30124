// The HTTP pipeline's storage shape: an idempotency key's stored answer. A leaf.

/** A stored response for an Idempotency-Key. */
export interface IdempotencyRecord {
  fingerprint: string
  status: number
  body: string
  headers: Record<string, string>
  expires_at: number
}
