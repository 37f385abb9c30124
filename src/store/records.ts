// The store's own storage shape: an outbox event. Each domain's shapes are in its own records.ts. A leaf.

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
