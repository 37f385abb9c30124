import type { ResolvedConfig } from '../config.js'
import type { SellersJson } from '../generated/types.js'
import type { PartnerRecord } from './records.js'
import type { Store } from '../store/store.js'

type Seller = SellersJson['sellers'][number]

/**
 * How a partner sells (IAB sellers.json seller_type): operators and integrators sell screens they run (PUBLISHER),
 * resellers and agencies sell others' (INTERMEDIARY), networks do both (BOTH).
 */
function sellerTypeOf (partnerType: PartnerRecord['partner_type']): Seller['seller_type'] {
  if (partnerType === 'reseller' || partnerType === 'agency') return 'INTERMEDIARY'
  return partnerType === 'network' ? 'BOTH' : 'PUBLISHER'
}

/**
 * Everyone whose screens this service sells: the operator itself (OPERATOR_SELLER_ID, its own screens) and each
 * registered partner (seller_id its slug). /sellers.json, /app-ads.txt and the AI buying agents'
 * list_authorized_properties and product properties all read this one list.
 */
export function sellers (operator: ResolvedConfig['operator'], store: Store): Seller[] {
  return [
    { seller_id: operator.sellerId, seller_type: 'PUBLISHER', name: operator.name, domain: operator.domain, is_confidential: 0, comment: 'Screens owned and operated by the network.' },
    ...[...store.partners.getRange()].map(({ value: p }) => ({ seller_id: p.seller_id, seller_type: sellerTypeOf(p.partner_type), name: p.name, is_confidential: 0 as const, ...(p.domain !== undefined ? { domain: p.domain } : {}) }))
  ]
}

/** The publisher domain a screen is sold under: its partner's domain, else the operator's (the network sells it). */
export function publisherDomainOf (operator: ResolvedConfig['operator'], store: Store, partnerId: string): string {
  return store.partners.get(partnerId)?.domain ?? operator.domain
}
