import { iso } from '../../clock.js'
import type { LegacyNotification } from '../../generated/types.js'
import type { Notices } from '../../notify/notices.js'
import type { SeatRecord } from '../../accounts/records.js'
import type { StoredBid } from '../records.js'
import type { ScreenRecord } from '../../inventory/records.js'
import type { Tier } from '../../player/records.js'
import type { Store } from '../../store/store.js'
import { addToHour } from '../hour-stats.js'
import { substitute, type MacroValues } from './macros.js'
import { LOSS_TEXT } from '../loss-codes.js'
import type { Candidate, Loss } from './waterfall.js'

/** What settling needs: the store and the notice queue, inside the caller's write transaction. */
export interface SettleDeps {
  store: Store
  notices: Notices
}

function macros (bid: NoticeBid): MacroValues {
  const v: MacroValues = { auctionId: bid.response_id, bidId: bid.bidid ?? bid.bid_id, impId: bid.impid, seatId: bid.seat_id }
  if (bid.adid !== undefined) v.adId = bid.adid
  return v
}

function seatOf (store: Store, bid: NoticeBid): SeatRecord | undefined {
  return store.seats.get(bid.seat_id.toLowerCase())
}

/** The screen as legacy notifications describe it. */
function screenFacts (s: ScreenRecord): LegacyNotification['data']['screen'] {
  return { screen_id: s.screen_id, name: s.name, venue_type: s.location.venue_type, city: s.location.city, state: s.location.state, country: s.location.country, lat: s.location.lat, lng: s.location.lng, slot_duration_seconds: s.slot_duration_seconds }
}

/**
 * The legacy notification to the seat's notification_url, if it has one; the payload is built only then (an auction
 * settles every bid on its screen, and most seats have none).
 */
function legacy (deps: SettleDeps, bid: NoticeBid, event: LegacyNotification['event'], data: () => LegacyNotification['data'], now: number): void {
  const seat = seatOf(deps.store, bid)
  if (seat?.notification_url === undefined) return
  const draft = { kind: 'legacy' as const, url: seat.notification_url, seat_id: bid.seat_id, event, body: JSON.stringify({ event, data: data() }) }
  deps.notices.enqueue(bid.key_id !== undefined ? { ...draft, key_id: bid.key_id } : draft, now)
}

/**
 * Takes a bid out of the live book. Its expiry entry stays: the expiry job drops an entry whose bid is gone (or was
 * replaced) when its time comes, in expiry order. Removing it here cost a settled auction a page of the expiry index
 * per bid, each bid's on a page of its own, since entries are ordered by time, not by screen (bench/spots).
 */
function consume (store: Store, key: [string, string, string]): void {
  store.bids.removeSync(key)
}

/** What loss notices need of a bid, stored or rejected at intake. */
export type NoticeBid = Pick<StoredBid, 'bid_id' | 'response_id' | 'impid' | 'seat_id' | 'creative_id' | 'price' | 'lurl' | 'bidid' | 'adid' | 'key_id' | 'dealid'>

/** A lost bid's lurl with ${AUCTION_LOSS} (and ${AUCTION_MIN_TO_WIN} when disclosed), and the legacy bid.lost. */
export function lossNotices (deps: SettleDeps, bid: NoticeBid, screen: ScreenRecord | undefined, code: number, minToWin: number | undefined, tier: Tier | undefined, now: number): void {
  if (bid.lurl !== undefined && bid.lurl !== '') {
    const values: MacroValues = { ...macros(bid), loss: code }
    if (minToWin !== undefined) values.minToWin = minToWin
    deps.notices.enqueue({ kind: 'lurl', url: substitute(bid.lurl, values), seat_id: bid.seat_id }, now)
  }
  // A screen deleted since the bid has nothing left to describe; the lurl still tells the buyer.
  if (screen === undefined) return
  legacy(deps, bid, 'bid.lost', () => {
    const data: LegacyNotification['data'] = {
      bid_id: bid.bid_id, response_id: bid.response_id, impid: bid.impid, seat_id: bid.seat_id, creative_id: bid.creative_id,
      bid_price_cpm: bid.price, loss_code: code, loss_reason: LOSS_TEXT[code] ?? 'lost', min_to_win_cpm: minToWin ?? null,
      screen: screenFacts(screen), at: iso(now)
    }
    if (bid.dealid !== undefined) data.deal_id = bid.dealid
    if (tier !== undefined) data.tier = tier
    return data
  }, now)
}

/** Settles a stored bid that did not win: out of the book, then its loss notices. */
export function settleLoss (deps: SettleDeps, screen: ScreenRecord | undefined, loss: Loss, tier: Tier | undefined, now: number): void {
  consume(deps.store, loss.candidate.key)
  lossNotices(deps, loss.candidate.bid, screen, loss.code, loss.minToWin, tier, now)
}

/**
 * Settles the winning bid of an auction: out of the book, a win for the seat's stats, its nurl with the clearing
 * price, and the legacy bid.won. Billing (burl, spend) waits for the play to complete.
 */
export function settleWin (deps: SettleDeps, screen: ScreenRecord, winner: Candidate & { clearing: number }, tier: Tier, spotId: string, now: number): void {
  const { bid, clearing } = winner
  consume(deps.store, winner.key)
  addToHour(deps.store, bid.seat_id, now, (h) => {
    h.wins++
    h.win_cpm_sum += clearing
  })
  if (bid.nurl !== undefined) {
    deps.notices.enqueue({ kind: 'nurl', url: substitute(bid.nurl, { ...macros(bid), price: clearing, mbr: bid.price > 0 ? clearing / bid.price : 1, multiplier: bid.multiplier }), seat_id: bid.seat_id }, now)
  }
  legacy(deps, bid, 'bid.won', () => {
    const data: LegacyNotification['data'] = {
      bid_id: bid.bid_id, response_id: bid.response_id, impid: bid.impid, seat_id: bid.seat_id, creative_id: bid.creative_id,
      spot_id: spotId, tier, bid_price_cpm: bid.price, win_price_cpm: clearing, multiplier: bid.multiplier, screen: screenFacts(screen), at: iso(now)
    }
    if (bid.dealid !== undefined) data.deal_id = bid.dealid
    return data
  }, now)
}

/** Fires the billing notice of a completed play: burl with the clearing price, confirmed multiplier and play time. */
export function settleBilling (deps: SettleDeps, bid: StoredBid & { clearing: number }, multiplier: number, playedAt: number, now: number): void {
  if (bid.burl === undefined) return
  const url = substitute(bid.burl, { ...macros(bid), price: bid.clearing, mbr: bid.price > 0 ? bid.clearing / bid.price : 1, multiplier, impTs: playedAt })
  deps.notices.enqueue({ kind: 'burl', url, seat_id: bid.seat_id }, now)
}
