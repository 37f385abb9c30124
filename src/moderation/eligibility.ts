import { AGE_RANK } from '../inventory/adslot-index.js'
import type { CreativeRecord, ScreenRecord } from '../store/records.js'

/**
 * Why a creative may not play on a screen, or undefined when it may: it is not approved; one of its categories
 * (found by moderation or declared by the buyer) is blocked by the screen, a blocked tier-1 category blocking all of
 * its subcategories; its advertiser's domain (or a parent domain) is blocked; or its age rating is above the screen's.
 * Bidding answers such bids with creative_blocked.
 */
export function blockReason (creative: CreativeRecord, screen: ScreenRecord): string | undefined {
  if (creative.status !== 'approved') return `creative ${creative.creative_id} is ${creative.status}`
  const categories = new Set([...(creative.moderation?.iab_categories.map((c) => c.id) ?? []), ...(creative.declared_categories ?? [])])
  for (const blocked of screen.blocked_categories) {
    for (const c of categories) if (c === blocked || c.startsWith(`${blocked}-`)) return `category ${c} is blocked on this screen`
  }
  const domain = creative.advertiser_domain
  if (domain !== undefined && screen.blocked_advertisers.some((b) => domain === b || domain.endsWith(`.${b}`))) return `advertiser ${domain} is blocked on this screen`
  const rating = creative.moderation?.age_rating
  if (rating !== undefined && AGE_RANK[rating] > AGE_RANK[screen.max_age_rating]) return `age rating ${rating} is above the screen's ${screen.max_age_rating}`
  return undefined
}
