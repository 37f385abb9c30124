// Bidding's storage shapes: bids received and a seat's hourly counters, and the tables that hold them.
import type { LiveAudience } from '../generated/types.js'
import { table } from '../store/table.js'

/** A production bid waiting for its screen's next spot (the open auction of the waterfall). */
export interface StoredBid {
  bid_id: string
  response_id: string
  seat_id: string
  impid: string
  screen_id: string
  price: number
  floor: number
  multiplier: number
  creative_id: string
  adomain: string[]
  dealid?: string
  nurl?: string
  lurl?: string
  burl?: string
  adm?: string
  received_at: number
  expires_at: number
  /** The key that submitted it: legacy notifications are signed with it. */
  key_id?: string
  /** BidResponse.bidid, for ${AUCTION_BID_ID}. */
  bidid?: string
  adid?: string
  /** The live audience of the FEIN segment it named (ext.oohbid.segment): it plays only while the screen's is in it. */
  audience?: LiveAudience
}

/**
 * A stored bid's place in the book: [screen_id, its imp id's tag, seat_id] (book.ts). A seat's bid on an imp replaces
 * its earlier one there, and a screen's bids are one range.
 */
export type BookKey = [string, string, string]

/** A stored bid's place in the expiry order: [expires ms, screen_id, imp id's tag, seat_id]. */
export type ExpiryKey = [number, string, string, string]

/**
 * A bid a settlement took, as its partition's log knows it (fenced-settlements.ts): [received ms, screen_id, imp id's
 * tag, seat_id, bid_id]. A seat's later bid on the same imp has another received time and id.
 */
export type SettledBid = [number, string, string, string, string]

/**
 * A cluster node's settlement of bids on one screen (a spot decision's, an expiry's), proposed to the screen's
 * partition's log under the owner's epoch: it counts only if accepted there.
 */
export interface SettleCommand {
  op: 'settle_bids'
  /** New for each settlement: its held notices are kept under it (Notices.hold). */
  key: string
  bids: SettledBid[]
  /**
   * How long the proposer's book stream keeps a bid (BID_TTL_SECONDS and ten minutes): settlements older than that
   * are forgotten as this one is applied. Carried in the command, so every node forgets at the same step.
   */
  keep_ms?: number
}

/**
 * A settlement this node proposed and the log has not decided yet (fenced-settlements.ts): the bids it took out of
 * this node's copy, put back if the log refuses it, with its partition and when it was decided (this node's clock).
 */
export interface PendingSettlement {
  partition: number
  at: number
  /** The bids it settles, as its command names them. */
  taken: SettledBid[]
  /** Those of them it took out of this node's copy. */
  bids: StoredBid[]
}

/** One hour of a seat's bidding. */
export interface HourStats {
  bid_responses: number
  bids: number
  accepted: number
  rejected: Record<string, number>
  wins: number
  spend_usd: number
  accepted_cpm_sum: number
  win_cpm_sum: number
  latency_ms_sum: number
  latency_max_ms: number
}

/**
 * Whether a seat's counters changed what it won or spent since the value last written to the state bucket: a win
 * is answered, and a play billed, once the round carrying it is acknowledged, so a node killed right after has
 * counted it where every node reads it; bids counted wait for the next snapshot (a second).
 */
function moneyMoved (written: unknown, value: unknown): boolean {
  const before = written as HourStats | undefined
  const after = value as HourStats | undefined
  return (after?.wins ?? 0) !== (before?.wins ?? 0) || (after?.spend_usd ?? 0) !== (before?.spend_usd ?? 0)
}

/** The bidding domain's tables (src/store/tables.ts). */
export const biddingTables = {
  /** [screen_id, imp id's tag, seat_id] (src/bidding/book.ts) -> the seat's latest bid on that spot. */
  bids: table<StoredBid, BookKey>({ name: 'bids', ordered: true, shapes: true, replication: 'book', owners: ['src/bidding/'] }),
  /**
   * [seat_id lower-cased, hour start ms, node] -> that hour's bidding counters on that node ('' on one node; rows an
   * earlier version wrote have no node). A seat's hour is the sum of its rows, each written by one node only.
   */
  stats: table<HourStats, [string, number] | [string, number, string]>({ name: 'stats', ordered: true, shapes: true, replication: 'book', snapshot: true, withRound: moneyMoved, owners: ['src/bidding/'] }),
  /** [expires ms, screen_id, imp id's tag, seat_id] -> 1: stored bids in expiry order, for their lurl with code 2. */
  bidExpiry: table<1, ExpiryKey>({ name: 'bid_expiry', ordered: true, replication: 'local', owners: ['src/bidding/'] }),
  /**
   * [partition, received ms, screen_id, imp id's tag, seat_id] -> [bid_id, settlement key]: bids a settlement accepted
   * in their partition's log took, kept as long as the book stream may still bring them (fenced-settlements.ts).
   * Written only by the logs' apply.
   */
  settledBids: table<[string, string], [number, number, string, string, string]>({ name: 'settled_bids', ordered: true, replication: 'local', owners: ['src/bidding/'] }),
  /** settlement key -> a settlement this node proposed to its partition's log, until the log decides it. */
  pendingSettlements: table<PendingSettlement>({ name: 'pending_settlements', replication: 'local', owners: ['src/bidding/'] })
}
