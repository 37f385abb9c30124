// Accounts' storage shapes: what the seats table holds. A leaf: the store reads these types.
import type { CustomRateLimits, SeatStatus } from '../generated/types.js'

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
  created_at: string
  updated_at: string
}
