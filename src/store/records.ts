// The store's own storage shapes: an outbox event, an object's sum. Each domain's shapes are in its own records.ts. A leaf.

/** A domain event in the transactional outbox. */
export interface OutboxEvent {
  seq: number
  id: string
  type: string
  subject: string
  seat_id?: string
  at: string
  data: Record<string, unknown>
}

/** What the `objects` table records of a stored object (src/store/objects.ts): its size and SHA-256 (hex). */
export interface ObjectSum {
  bytes: number
  sha256: string
}
