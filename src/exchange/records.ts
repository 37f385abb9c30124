// The exchange path's storage shapes: bidder aliases, bids sent to exchanges, and the tables that hold them.
import { cachedTable, table } from '../store/table.js'

/** An exchange's bidder alias (operator API); the signing secret is kept sealed like API keys. */
export interface BidderAliasRecord {
  alias: string
  name: string
  status: 'active' | 'disabled'
  ip_allowlist: string[]
  require_signature: boolean
  secret_sealed?: string
  rate_limit_per_minute: number
  default_tmax_ms: number
  notices: { win: boolean, loss: boolean, billing: boolean }
  seats?: string[]
  created_at: string
  updated_at: string
}

/** A bid oohbid made to an exchange for a campaign, until the exchange's notices settle it. */
export interface ExchangeBidRecord {
  bid_id: string
  alias: string
  request_id: string
  imp_id: string
  campaign_id: string
  seat_id: string
  creative_id: string
  price: number
  multiplier: number
  /** Budget held for the play until it is won and billed, lost or expired. */
  reserved_micros: number
  at: number
  status: 'pending' | 'won' | 'billed' | 'lost' | 'expired'
  test: boolean
  clearing?: number
  loss_code?: number
  settled_at?: number
}

/** The exchange domain's tables (src/store/tables.ts). */
export const exchangeTables = {
  /** alias -> an exchange's bidder configuration. */
  aliases: cachedTable<BidderAliasRecord>({ name: 'bidder_aliases', replication: 'record', owners: ['src/exchange/'] }),
  /** bid_id -> a bid made to an exchange. */
  exchangeBids: table<ExchangeBidRecord>({ name: 'exchange_bids', shapes: true, replication: 'local', owners: ['src/exchange/'] }),
  /** [made ms, bid_id] -> 1: exchange bids still pending, oldest first, for releasing their budget. */
  exchangePending: table<1, [number, string]>({ name: 'exchange_pending', ordered: true, replication: 'local', owners: ['src/exchange/'] })
}
