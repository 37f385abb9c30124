import type { CustomRateLimits, Scope, SeatStatus } from '../generated/types.js'

// Storage shapes. These are not wire objects (those live in schemas/): they hold what the wire never shows, such as
// key digests and callback URLs, and each route maps them to its schema'd response.

/** A buyer seat. Keyed by the lower-cased seat_id so that ids differing only in case cannot coexist. */
export interface SeatRecord {
  id: string
  seat_id: string
  company_name: string
  status: SeatStatus
  /** The status a suspended seat returns to when reinstated. */
  suspended_from?: SeatStatus
  openrtb_version: '2.5' | '2.6'
  contact_email: string
  billing_email: string
  notification_url?: string
  webhook_url?: string
  rate_limits: CustomRateLimits
  key_ids: string[]
  created_at: string
  updated_at: string
}

/** An API key. Only the SHA-256 digest of the key is stored; the key itself is shown once. */
export interface KeyRecord {
  key_id: string
  digest: string
  prefix: string
  kind: 'platform' | 'legacy'
  scopes: Scope[]
  seat_id?: string
  partner_id?: string
  label?: string
  created_at: string
  expires_at?: string
  revoked_at: string | null
}

/** A screen-operator partner. */
export interface PartnerRecord {
  id: string
  name: string
  slug: string
  partner_type: string
  contact_email: string
  domain?: string
  seller_id: string
  created_at: string
}

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

/** A stored response for an Idempotency-Key. */
export interface IdempotencyRecord {
  fingerprint: string
  status: number
  body: string
  headers: Record<string, string>
  expires_at: number
}
