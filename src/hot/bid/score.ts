import type { BidResult, OrtbBid } from '../../generated/types.js'
import { matchesEntry } from '../../campaigns/targeting.js'
import type { IndexKey } from '../../inventory/adslot-index.js'
import { blockReason } from '../../moderation/eligibility.js'
import { LOSS, lossOfBlock } from '../auction/loss-codes.js'
import type { DealRecord } from '../../store/records.js'
import type { Store } from '../../store/store.js'
import type { ImpIds, IssuedImp } from '../adslots/imp-ids.js'

export type Outcome = BidResult['results'][number]
type Reason = NonNullable<Outcome['reason']>

/** What scoring needs besides the bid. */
export interface ScoreContext {
  store: Store
  impIds: ImpIds
  seatId: string
  /** Active deals this seat is invited to. */
  deals: DealRecord[]
  cur: string
  now: number
}

const MACRO = /\$\{AUCTION_[A-Z_]+\}/g

/** Why one of a bid's notice URLs could not be called, or undefined when all can (checked with macros filled in). */
function noticeProblem (bid: OrtbBid): string | undefined {
  for (const field of ['nurl', 'lurl', 'burl'] as const) {
    const template = bid[field]
    if (template === undefined || template === '') continue
    const url = template.replace(MACRO, '0')
    if (!/^https?:\/\//i.test(url) || !URL.canParse(url)) return `${field} is not an http(s) URL once its macros are substituted.`
  }
  return undefined
}

function reject (bid: OrtbBid, reason: Reason, detail: string, extra: Partial<Outcome> = {}): Outcome {
  return { bid_id: bid.id, impid: bid.impid, status: 'rejected', reason, detail, stored: false, ...extra }
}

/** A scored bid: its result, the imp it named when that was issued to the seat, and for a rejection its OpenRTB loss code. */
export interface Scored {
  outcome: Outcome
  imp?: IssuedImp
  creativeId?: string
  loss?: number
}

/**
 * Scores one bid, in the order a buyer would want to be told: currency, the imp (issued to this seat, not expired),
 * adm or nurl, notice URLs that can be called, the creative (registered, approved, allowed on the screen; adomain and cat against the screen's
 * blocks), the deal, then the floor (the deal's price when a deal is named, else the screen's at issue time).
 */
export function scoreBid (bid: OrtbBid, c: ScoreContext): Scored {
  if (c.cur !== 'USD') return { outcome: reject(bid, 'currency_not_supported', `Prices are USD; cur was ${c.cur}.`), loss: LOSS.invalidResponse }
  const imp = c.impIds.read(bid.impid)
  if (imp === undefined || imp.seatId.toLowerCase() !== c.seatId.toLowerCase()) return { outcome: reject(bid, 'unknown_imp', 'impid is not an imp issued to this seat by GET /adslots?format=openrtb.'), loss: LOSS.invalidResponse }
  if (imp.expiresAt <= c.now) return { outcome: reject(bid, 'imp_expired', `The imp expired at ${new Date(imp.expiresAt).toISOString()}.`, { screen_id: imp.screenId }), imp, loss: LOSS.expired }
  const at = { screen_id: imp.screenId }
  if ((bid.adm === undefined || bid.adm === '') && (bid.nurl === undefined || bid.nurl === '')) return { outcome: reject(bid, 'missing_adm_and_nurl', 'A bid needs inline markup (adm) or a win-notice URL (nurl).', at), imp, loss: LOSS.missingMarkup }
  const badUrl = noticeProblem(bid)
  if (badUrl !== undefined) return { outcome: reject(bid, 'invalid_notice_url', badUrl, at), imp, loss: LOSS.invalidResponse }
  const screen = c.store.screens.get(imp.screenId)
  const creative = bid.crid !== undefined ? c.store.creatives.get(bid.crid) : undefined
  if (screen === undefined) return { outcome: reject(bid, 'unknown_imp', 'The screen of this imp is no longer listed.', at), imp, loss: LOSS.expired }
  if (creative === undefined || creative.seat_id.toLowerCase() !== c.seatId.toLowerCase()) return { outcome: reject(bid, 'creative_blocked', 'crid must name one of this seat\'s creatives (POST /creatives), so that it is moderated before it plays.', at), imp, loss: LOSS.creativeDisapproved }
  const blocked = blockReason(creative, screen)
  if (blocked !== undefined) return { outcome: reject(bid, 'creative_blocked', blocked, at), imp, loss: lossOfBlock(blocked) }
  const adomain = (bid.adomain ?? []).map((d) => d.toLowerCase())
  const badDomain = adomain.find((d) => screen.blocked_advertisers.some((b) => d === b || d.endsWith(`.${b}`)))
  if (badDomain !== undefined) return { outcome: reject(bid, 'creative_blocked', `advertiser ${badDomain} is blocked on this screen`, at), imp, loss: LOSS.advertiserExcluded }
  const badCat = (bid.cat ?? []).find((cat) => screen.blocked_categories.some((b) => cat === b || cat.startsWith(`${b}-`)))
  if (badCat !== undefined) return { outcome: reject(bid, 'creative_blocked', `category ${badCat} is blocked on this screen`, at), imp, loss: LOSS.categoryExcluded }
  let floor = imp.floor
  if (bid.dealid !== undefined) {
    const deal = c.deals.find((d) => d.deal_id === bid.dealid)
    const key = c.store.adslotPos.get(imp.screenId)
    const tuple = key !== undefined ? c.store.adslotIndex.get(key as IndexKey) : undefined
    const today = new Date(c.now).toISOString().slice(0, 10)
    if (deal === undefined || key === undefined || tuple === undefined || deal.start_date > today || deal.end_date < today || !matchesEntry(deal.targeting, key as IndexKey, tuple)) {
      return { outcome: reject(bid, 'invalid_deal', `dealid ${bid.dealid} is not an active deal for this seat on this screen.`, at), imp, loss: LOSS.invalidDeal }
    }
    floor = deal.fixed_cpm ?? deal.floor_cpm
  }
  if (bid.price < floor) return { outcome: reject(bid, 'below_floor', `price ${bid.price} is below the floor ${floor} USD CPM.`, { ...at, price: bid.price, floor }), imp, loss: bid.dealid !== undefined ? LOSS.belowDealFloor : LOSS.belowAuctionFloor }
  const outcome: Outcome = { bid_id: bid.id, impid: bid.impid, screen_id: imp.screenId, status: 'accepted', price: bid.price, floor, stored: false }
  if (bid.dealid !== undefined) outcome.dealid = bid.dealid
  return { outcome, imp, creativeId: creative.creative_id }
}
