import type { KeySummary, SeatRegistration } from '../generated/types.js'
import type { SeatRecord } from './records.js'
import type { KeyRecord } from '../auth/records.js'

/** A seat as its owner sees it: contact, billing and callback fields are never read back. */
export function registrationView (seat: SeatRecord): SeatRegistration {
  return { id: seat.id, seat_id: seat.seat_id, company_name: seat.company_name, status: seat.status, openrtb_version: seat.openrtb_version, created_at: seat.created_at }
}

/** A key as listed: its prefix, never the key or its digest. */
export function keyView (key: KeyRecord): KeySummary {
  const view: KeySummary = { key_id: key.key_id, prefix: key.prefix, kind: key.kind, scopes: key.scopes, created_at: key.created_at, revoked_at: key.revoked_at }
  if (key.seat_id !== undefined) view.seat_id = key.seat_id
  if (key.partner_id !== undefined) view.partner_id = key.partner_id
  if (key.label !== undefined) view.label = key.label
  if (key.expires_at !== undefined) view.expires_at = key.expires_at
  return view
}
