import { dealPrice } from '../campaigns/deal-rules.js'
import { AGE_RANK } from '../inventory/adslot-index.js'
import type { ScreenRecord } from '../inventory/records.js'
import type { DealRecord } from '../campaigns/records.js'
import type { CreativeRecord } from '../creatives/records.js'
import { LOSS } from './loss-codes.js'

/**
 * The bidding rules, in one place for the three paths that decide what may play: bid intake (src/bidding/score.ts), the
 * waterfall (src/bidding/auction) and the exchange bidder (src/exchange). Each rule answers with the OpenRTB 2.6 loss
 * code a buyer is told and the words that explain it.
 */

/** Why something may not play: its OpenRTB loss code (list 5.25) and the words for the buyer. */
export interface Refusal {
  loss: number
  detail: string
}

/** The first category a block list blocks: the same category, or a subcategory of a blocked one (IAB8 blocks IAB8-5). */
export function blockedCategory (categories: Iterable<string>, blocked: readonly string[]): string | undefined {
  if (blocked.length === 0) return undefined
  for (const c of categories) if (blocked.some((b) => c === b || c.startsWith(`${b}-`))) return c
  return undefined
}

/** The first domain a block list blocks: the same domain, or a subdomain of a blocked one (ads.brand.example by brand.example). */
export function blockedDomain (domains: Iterable<string>, blocked: readonly string[]): string | undefined {
  if (blocked.length === 0) return undefined
  for (const raw of domains) {
    const d = raw.toLowerCase()
    if (blocked.some((b) => d === b || d.endsWith(`.${b}`))) return d
  }
  return undefined
}

/** A creative's categories: those moderation found and those its buyer declared. */
export function creativeCategories (c: CreativeRecord): string[] {
  return [...(c.moderation?.iab_categories.map((x) => x.id) ?? []), ...(c.declared_categories ?? [])]
}

/** Why categories may not play on a screen (209), or undefined. */
function categoryRefusal (categories: Iterable<string>, screen: ScreenRecord): Refusal | undefined {
  const category = blockedCategory(categories, screen.blocked_categories)
  return category !== undefined ? { loss: LOSS.categoryExcluded, detail: `category ${category} is blocked on this screen` } : undefined
}

/** Why advertiser domains may not play on a screen (205), or undefined. */
function domainRefusal (domains: Iterable<string>, screen: ScreenRecord): Refusal | undefined {
  const domain = blockedDomain(domains, screen.blocked_advertisers)
  return domain !== undefined ? { loss: LOSS.advertiserExcluded, detail: `advertiser ${domain} is blocked on this screen` } : undefined
}

/**
 * Why a creative may not play on a screen, or undefined when it may: it is not approved (201 while moderation or an
 * upload is pending, 202 when rejected); one of its categories is blocked by the screen (209); its advertiser's
 * domain is (205); its age rating is above the screen's (200).
 */
export function creativeRefusal (creative: CreativeRecord, screen: ScreenRecord): Refusal | undefined {
  if (creative.status !== 'approved') return { loss: creative.status === 'rejected' ? LOSS.creativeDisapproved : LOSS.creativePending, detail: `creative ${creative.creative_id} is ${creative.status}` }
  const blocked = categoryRefusal(creativeCategories(creative), screen) ?? domainRefusal(creative.advertiser_domain !== undefined ? [creative.advertiser_domain] : [], screen)
  if (blocked !== undefined) return blocked
  const rating = creative.moderation?.age_rating
  if (rating !== undefined && AGE_RANK[rating] > AGE_RANK[screen.max_age_rating]) return { loss: LOSS.creativeFiltered, detail: `age rating ${rating} is above the screen's ${screen.max_age_rating}` }
  return undefined
}

/** Why what a bid declares of itself (adomain, cat) may not play on a screen: each block that applies. */
export function declaredRefusals (bid: { adomain?: readonly string[], cat?: readonly string[] }, screen: ScreenRecord): Refusal[] {
  return [domainRefusal(bid.adomain ?? [], screen), categoryRefusal(bid.cat ?? [], screen)].filter((r) => r !== undefined)
}

/**
 * The floor a bid must meet: the deal's price when it names one, else the higher of the floor its imp was issued at
 * and the screen's floor now (a floor raised since the imp was issued is the floor in force).
 */
export function floorFor (deal: DealRecord | undefined, issuedFloor: number, screen: Pick<ScreenRecord, 'floor_price_cpm'>): number {
  return deal !== undefined ? dealPrice(deal) : Math.max(issuedFloor, screen.floor_price_cpm)
}

/** Why a price does not meet a floor (101 on a deal, 100 in the open auction), or undefined when it does. */
export function floorRefusal (price: number, floor: number, onDeal: boolean): Refusal | undefined {
  if (price >= floor) return undefined
  return { loss: onDeal ? LOSS.belowDealFloor : LOSS.belowAuctionFloor, detail: `price ${price} is below the floor ${floor} USD CPM.` }
}
