// Accounts' storage shapes: what the seats table holds. The store opens the tables declared here.
import type { CustomRateLimits, SeatStatus } from '../generated/types.js'
import { cachedTable, table } from '../store/table.js'

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

/** The accounts domain's tables (src/store/tables.ts). */
export const accountTables = {
  seats: cachedTable<SeatRecord>({ name: 'seats', replication: 'record', owners: ['src/accounts/'] }),
  /** [kind, seat_id lower-cased, -created ms, id] -> id: a seat's creatives, campaigns, assignments and reservations, newest first. */
  bySeat: table<string, [string, string, number, string]>({ name: 'by_seat', ordered: true, replication: 'local', owners: ['src/accounts/'] })
}
