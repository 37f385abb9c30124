import type { SeatRecord } from '../accounts/records.js'
import type { Scope } from '../generated/types.js'
import type { PartnerRecord } from '../inventory/records.js'
import type { KeyRecord } from './records.js'

/** Who is calling, resolved from the API key. */
export interface Principal {
  key: KeyRecord
  seat?: SeatRecord
  partner?: PartnerRecord
}

/** How a route authenticates. */
export type AuthMode =
  | 'seat' // a key linked to a seat (buyer control plane)
  | 'partner' // a key of a registered partner
  | 'key' // any valid key
  | 'optional-key' // onboarding: a key is used if present, and must then be valid
  | 'admin' // the operator token
  | 'none'

/** What a route asks of its caller (RouteDef's auth and scope): all the authenticator reads of a route. */
export interface Access {
  auth: AuthMode
  scope?: Scope
}
