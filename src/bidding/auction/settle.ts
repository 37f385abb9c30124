import { iso } from '../../clock.js'
import type { LegacyNotification } from '../../generated/types.js'
import type { NoticeDraft, Notices } from '../../notify/notices.js'
import type { SeatRecord } from '../../accounts/records.js'
import type { BookKey, SettledBid, StoredBid } from '../records.js'
import type { ScreenRecord } from '../../inventory/records.js'
import type { Tier } from '../../player/records.js'
import type { Store } from '../../store/store.js'
import { bookKey } from '../book.js'
import { addToHour } from '../hour-stats.js'
import { substitute, type MacroValues } from './macros.js'
import { LOSS_TEXT } from '../loss-codes.js'
import { pendSettlement } from './fenced-settlements.js'
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
function legacy (store: Store, bid: NoticeBid, event: LegacyNotification['event'], data: () => LegacyNotification['data'], into: NoticeDraft[]): void {
  const seat = seatOf(store, bid)
  if (seat?.notification_url === undefined) return
  const draft = { kind: 'legacy' as const, url: seat.notification_url, seat_id: bid.seat_id, event, body: JSON.stringify({ event, data: data() }) }
  into.push(bid.key_id !== undefined ? { ...draft, key_id: bid.key_id } : draft)
}

/** What loss notices need of a bid, stored or rejected at intake. */
export type NoticeBid = Pick<StoredBid, 'bid_id' | 'response_id' | 'impid' | 'seat_id' | 'creative_id' | 'price' | 'lurl' | 'bidid' | 'adid' | 'key_id' | 'dealid'>

/** A lost bid's lurl with ${AUCTION_LOSS} (and ${AUCTION_MIN_TO_WIN} when disclosed), and the legacy bid.lost. */
function lossDrafts (store: Store, bid: NoticeBid, screen: ScreenRecord | undefined, code: number, minToWin: number | undefined, tier: Tier | undefined, now: number, into: NoticeDraft[]): void {
  if (bid.lurl !== undefined && bid.lurl !== '') {
    const values: MacroValues = { ...macros(bid), loss: code }
    if (minToWin !== undefined) values.minToWin = minToWin
    into.push({ kind: 'lurl', url: substitute(bid.lurl, values), seat_id: bid.seat_id })
  }
  // A screen deleted since the bid has nothing left to describe; the lurl still tells the buyer.
  if (screen === undefined) return
  legacy(store, bid, 'bid.lost', () => {
    const data: LegacyNotification['data'] = {
      bid_id: bid.bid_id, response_id: bid.response_id, impid: bid.impid, seat_id: bid.seat_id, creative_id: bid.creative_id,
      bid_price_cpm: bid.price, loss_code: code, loss_reason: LOSS_TEXT[code] ?? 'lost', min_to_win_cpm: minToWin ?? null,
      screen: screenFacts(screen), at: iso(now)
    }
    if (bid.dealid !== undefined) data.deal_id = bid.dealid
    if (tier !== undefined) data.tier = tier
    return data
  }, into)
}

/** Sends a lost bid's loss notices (lossDrafts); call inside Store.write. */
export function lossNotices (deps: SettleDeps, bid: NoticeBid, screen: ScreenRecord | undefined, code: number, minToWin: number | undefined, tier: Tier | undefined, now: number): void {
  const drafts: NoticeDraft[] = []
  lossDrafts(deps.store, bid, screen, code, minToWin, tier, now, drafts)
  for (const draft of drafts) deps.notices.enqueue(draft, now)
}

/** A stored bid as a decision took it: which record to take out of the book. */
export interface TakenBid {
  key: BookKey
  /** The bid's identity: a bid the seat sent again for the same imp since the decision replaced it, and stays. */
  received_at: number
  bid_id: string
}

/**
 * What a spot decision settles, decided from a snapshot and applied later, in its thread's turn (plain JSON, for
 * the hot-thread journal): every stored bid on the screen leaves the book, each with the notices of its outcome, and
 * the winner counts a win in its seat's hour. Billing (burl, spend) waits for the play to complete.
 */
export interface Settlement {
  taken: TakenBid[]
  notices: NoticeDraft[]
  win?: { seat_id: string, clearing: number }
  /**
   * Set where the settlement counts only once its screen's partition's log accepts it (Share.settlements): its key
   * there, new for each settlement.
   */
  key?: string
}

const taken = ({ key, bid }: { key: BookKey, bid: StoredBid }): TakenBid => ({ key, received_at: bid.received_at, bid_id: bid.bid_id })

/**
 * A decision's settlement: the winner (its nurl with the clearing price, the legacy bid.won) and every loss (lurl
 * with its code, the legacy bid.lost). Reads only.
 */
export function settlementOf (store: Store, screen: ScreenRecord, losses: readonly Loss[], winner: (Candidate & { clearing: number }) | undefined, tier: Tier, spotId: string, now: number): Settlement {
  const s: Settlement = { taken: [], notices: [] }
  for (const loss of losses) {
    s.taken.push(taken(loss.candidate))
    lossDrafts(store, loss.candidate.bid, screen, loss.code, loss.minToWin, tier, now, s.notices)
  }
  if (winner !== undefined) {
    const { bid, clearing } = winner
    s.taken.push(taken(winner))
    s.win = { seat_id: bid.seat_id, clearing }
    if (bid.nurl !== undefined) {
      s.notices.push({ kind: 'nurl', url: substitute(bid.nurl, { ...macros(bid), price: clearing, mbr: bid.price > 0 ? clearing / bid.price : 1, multiplier: bid.multiplier }), seat_id: bid.seat_id })
    }
    legacy(store, bid, 'bid.won', () => {
      const data: LegacyNotification['data'] = {
        bid_id: bid.bid_id, response_id: bid.response_id, impid: bid.impid, seat_id: bid.seat_id, creative_id: bid.creative_id,
        spot_id: spotId, tier, bid_price_cpm: bid.price, win_price_cpm: clearing, multiplier: bid.multiplier, screen: screenFacts(screen), at: iso(now)
      }
      if (bid.dealid !== undefined) data.deal_id = bid.dealid
      return data
    }, s.notices)
  }
  return s
}

/** The settlement of stored bids that lost with one code and no auction (expired imps): each leaves with its loss notices. */
export function lossSettlement (store: Store, bids: ReadonlyArray<{ key: BookKey, bid: StoredBid }>, screen: ScreenRecord | undefined, code: number, now: number): Settlement {
  const s: Settlement = { taken: [], notices: [] }
  for (const b of bids) {
    s.taken.push(taken(b))
    lossDrafts(store, b.bid, screen, code, undefined, undefined, now, s.notices)
  }
  return s
}

/**
 * Applies settlements, in order; call inside Store.write. The bids a decision took leave the book. Where its seat may
 * have bid on the imp again since the decision's snapshot (check: the screen's claim was marked, ScreenClaims.mark,
 * or a journal is replayed after a crash, when that is not known), the new bid took the old one's key: a bid leaves
 * only if it is still the one taken, and the new one waits for the next decision. Reading each back costs a decode,
 * so only then. The bids' expiry entries stay: the expiry job drops an entry whose bid is gone when its time comes,
 * in expiry order, where removing each here cost a page of the index per bid, since entries are ordered by time, not
 * by screen (bench/spots). Each seat's hour counts its wins once.
 */
export function applySettlements (deps: SettleDeps, settlements: ReadonlyArray<{ settlement: Settlement, at: number, check: boolean }>): void {
  const { store, notices } = deps
  const fence = store.share.settlements
  const wins = new Map<string, { seat: string, at: number, wins: number, cpm: number }>()
  for (const { settlement, at, check } of settlements) {
    const key = fence !== undefined ? settlement.key : undefined
    const taken: SettledBid[] = []
    const removed: StoredBid[] = []
    for (const t of settlement.taken) {
      // A journal replayed (always checked) may be from before keys held the imp id's tag, and name the whole imp id.
      const bookKeyOfBid = check ? bookKey(t.key[0], t.key[1], t.key[2]) : t.key
      // Fenced, every bid the decision took is the log's to settle, here or not: the log refuses a second settlement.
      if (key !== undefined) taken.push([t.received_at, ...bookKeyOfBid, t.bid_id])
      const bid = check || key !== undefined ? store.bids.get(bookKeyOfBid) : undefined
      const still = bid !== undefined && bid.received_at === t.received_at && bid.bid_id === t.bid_id
      if (check && !still) continue
      if (key === undefined) store.bids.removeSync(bookKeyOfBid)
      else if (still) {
        // Only this node's copy, kept aside: the removal is the log's to decide, on every node, once it accepts the
        // settlement; refused, the bid comes back here.
        store.share.ownCopy(store, () => store.bids.removeSync(bookKeyOfBid))
        removed.push(bid)
      }
    }
    if (key === undefined) for (const draft of settlement.notices) notices.enqueue(draft, at)
    else {
      const partition = fence!.partition(taken[0]![1])
      notices.hold(key, settlement.notices, at)
      pendSettlement(store, key, { partition, at, taken, bids: removed })
      store.afterCommit(() => { void fence!.propose(partition, { op: 'settle_bids', key, bids: taken }) })
    }
    const win = settlement.win
    if (win === undefined) continue
    const hour = `${Math.floor(at / 3_600_000)}|${win.seat_id.toLowerCase()}`
    const counted = wins.get(hour)
    if (counted === undefined) wins.set(hour, { seat: win.seat_id, at, wins: 1, cpm: win.clearing })
    else {
      counted.wins++
      counted.cpm += win.clearing
    }
  }
  for (const { seat, at, wins: n, cpm } of wins.values()) {
    addToHour(store, seat, at, (h) => {
      h.wins += n
      h.win_cpm_sum += cpm
    })
  }
}

/** Fires the billing notice of a completed play: burl with the clearing price, confirmed multiplier and play time. */
export function settleBilling (deps: SettleDeps, bid: StoredBid & { clearing: number }, multiplier: number, playedAt: number, now: number): void {
  if (bid.burl === undefined) return
  const url = substitute(bid.burl, { ...macros(bid), price: bid.clearing, mbr: bid.price > 0 ? bid.clearing / bid.price : 1, multiplier, impTs: playedAt })
  deps.notices.enqueue({ kind: 'burl', url, seat_id: bid.seat_id }, now)
}
