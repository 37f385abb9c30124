import type { BidResult, LiveAudience, OrtbBid } from '../generated/types.js'
import { LOSS } from './loss-codes.js'
import { creativeRefusal, declaredRefusals, floorFor, floorRefusal } from './rules.js'
import { dealRuns } from '../campaigns/deal-rules.js'
import { indexEntryOf } from '../inventory/adslot-index.js'
import { screenDate } from '../inventory/local-time.js'
import type { DealRecord } from '../campaigns/records.js'
import type { ScreenRecord } from '../inventory/records.js'
import { assetInMarkup } from '../creatives/from-markup.js'
import { assetUrlProblem, creativeIdOfCrid, seatCreativeByCrid, type NewCreative } from '../creatives/register.js'
import type { Store } from '../store/store.js'
import { seatSegmentAudience } from '../inventory/segments.js'
import type { ImpIds, IssuedImp } from '../inventory/adslots/imp-ids.js'

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
  /** ALLOW_PRIVATE_ASSET_URLS: markup assets on private addresses may be registered (tests). */
  allowPrivateAssetUrls: boolean
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

/** One reason a bid cannot play, with its OpenRTB loss code. */
interface Problem {
  reason: Reason
  detail: string
  loss: number
}

/** A scored bid: its result, the imp it named when that was issued to the seat, and for a rejection its OpenRTB loss code. */
export interface Scored {
  outcome: Outcome
  imp?: IssuedImp
  creativeId?: string
  loss?: number
  /**
   * A creative the markup carries under a crid the seat has not registered: the caller registers it as creativeId
   * (then moderation).
   */
  register?: NewCreative
  /** The live audience of the segment it named: stored with it, for the waterfall to check. */
  audience?: LiveAudience
}

/**
 * The creative a bid names and why it may not play on the screen. A crid the seat has not registered, with an image
 * or video in the markup, is registered from it (as the large exchanges do) and cannot play until moderation
 * approves it (loss 201); the same crid then bids normally.
 */
function creativeProblems (bid: OrtbBid, screen: ScreenRecord, c: ScoreContext): { problems: Problem[], creativeId?: string, register?: Scored['register'] } {
  const crid = bid.crid
  const creative = crid !== undefined ? seatCreativeByCrid(c.store, c.seatId, crid) : undefined
  if (creative === undefined) {
    const asset = crid !== undefined ? assetInMarkup(bid.adm) : undefined
    const urlProblem = asset !== undefined ? assetUrlProblem(asset.url, c.allowPrivateAssetUrls) : undefined
    if (crid === undefined || asset === undefined || urlProblem !== undefined) {
      const why = crid === undefined
        ? 'A bid needs crid naming its creative'
        : `crid ${crid} is not a creative of this seat, and its markup carries ${urlProblem !== undefined ? `an asset URL that ${urlProblem}` : 'no image or video URL'} to register it from`
      return { problems: [{ reason: 'creative_blocked', detail: `${why}: register it (POST /creatives) or send the asset in adm (an <img>, a VAST MediaFile or the asset's URL), so that it is moderated before it plays.`, loss: LOSS.creativeDisapproved }] }
    }
    const id = creativeIdOfCrid(c.seatId, crid)
    const creativeFields: NewCreative = { name: `crid ${crid}`, content_type: asset.content_type, mode: 'url', source_url: asset.url, crid }
    const domain = bid.adomain?.[0]
    if (domain !== undefined) creativeFields.advertiser_domain = domain
    if (bid.cat !== undefined && bid.cat.length > 0) creativeFields.declared_categories = bid.cat
    return {
      creativeId: id,
      register: creativeFields,
      problems: [{ reason: 'creative_blocked', detail: `crid ${crid} is new: its ${asset.content_type} from the markup is registered as creative ${id} and sent to moderation (creative.moderation.completed tells the outcome); bids with this crid play once it is approved.`, loss: LOSS.creativePending }]
    }
  }
  const refused = creativeRefusal(creative, screen)
  const problems = [...(refused !== undefined ? [refused] : []), ...declaredRefusals(bid, screen)].map((r): Problem => ({ reason: 'creative_blocked', ...r }))
  return { problems, creativeId: creative.creative_id }
}

/**
 * Scores one bid, in the order a buyer would want to be told. What makes the bid unreadable stops scoring at once:
 * currency, the imp (issued to this seat, not expired), adm or nurl, notice URLs that can be called, the deal, the
 * FEIN segment it names (activated by the seat). Then
 * every reason it cannot play is reported by the bidding rules (src/bidding/rules.ts), the floor first (the deal's
 * price when a deal is named, else the screen's in force), then the creative (registered, approved, allowed on the
 * screen; adomain and cat against the screen's blocks); reason, detail and the loss code are the first one's.
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
  if (screen === undefined) return { outcome: reject(bid, 'unknown_imp', 'The screen of this imp is no longer listed.', at), imp, loss: LOSS.expired }
  const deal = bid.dealid !== undefined ? c.deals.find((d) => d.deal_id === bid.dealid) : undefined
  if (bid.dealid !== undefined && (deal === undefined || !dealRuns(deal, screenDate(screen, c.now), indexEntryOf(c.store, imp.screenId)))) {
    return { outcome: reject(bid, 'invalid_deal', `dealid ${bid.dealid} is not an active deal for this seat on this screen.`, at), imp, loss: LOSS.invalidDeal }
  }
  const segment = bid.ext?.oohbid?.segment
  const audience = segment !== undefined ? seatSegmentAudience(c.store, c.seatId, segment) : undefined
  if (segment !== undefined && audience === undefined) return { outcome: reject(bid, 'invalid_segment', `ext.oohbid.segment ${segment} is not a FEIN signal this seat activated: find it with get_signals and activate it with activate_signal (POST /mcp).`, at), imp, loss: LOSS.invalidResponse }
  const floor = floorFor(deal, imp.floor, screen)
  const problems: Problem[] = []
  const belowFloor = floorRefusal(bid.price, floor, deal !== undefined)
  if (belowFloor !== undefined) problems.push({ reason: 'below_floor', ...belowFloor })
  const { problems: creative, creativeId, register } = creativeProblems(bid, screen, c)
  problems.push(...creative)
  const scored: Scored = { outcome: { bid_id: bid.id, impid: bid.impid, screen_id: imp.screenId, status: 'accepted', price: bid.price, floor, stored: false }, imp }
  if (creativeId !== undefined) scored.creativeId = creativeId
  if (register !== undefined) scored.register = register
  if (audience !== undefined) scored.audience = audience
  const [first] = problems
  if (first !== undefined) {
    scored.outcome = reject(bid, first.reason, first.detail, { ...at, price: bid.price, floor, reasons: problems })
    scored.loss = first.loss
  } else if (bid.dealid !== undefined) {
    scored.outcome.dealid = bid.dealid
  }
  if (creativeId !== undefined) scored.outcome.creative_id = creativeId
  return scored
}
