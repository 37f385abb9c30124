// Campaigns' storage shapes: campaigns, their ledgers, assignments, reservations and deals as stored, and the tables
// that hold them.
import type { Assignment, Campaign, Deal, Reservation } from '../generated/types.js'
import { cachedTable, table } from '../store/table.js'

/**
 * A campaign with its owner; screens are computed per request, and what it delivered is summed from its delivery rows
 * (src/campaigns/delivery.ts), neither stored here.
 */
export interface CampaignRecord extends Omit<Campaign, 'screens' | 'impressions' | 'spent_usd'> {
  seat_id: string
  /** Set when campaign.started is raised, at its first impression on any node. */
  started_at?: string
}

export interface AssignmentRecord extends Assignment {
  seat_id: string
  /** A guaranteed line: the claim its spots are booked under; absent on placements booked before claims. */
  claim?: string
}

export interface ReservationRecord extends Reservation {
  seat_id: string
  expires_ms: number
  /** The claim its spots are held under (src/campaigns/capacity.ts); absent on holds made before claims. */
  claim?: string
}

export interface DealRecord extends Deal {
  /** Guaranteed: spots booked per screen and day on approval. */
  booked_per_day?: number
  booked_screens?: string[]
  /** Guaranteed: the claim its spots are booked under. */
  claim?: string
}

/**
 * One screen-day a booking takes: its spots, the day's capacity as the booker's copy of the screen gives it, the
 * screen's position among those the request named (for the error's param), and for a daypart line the day's spots
 * hour by hour as [hour, spots, the hour's capacity].
 */
export interface BookingItem {
  screen: string
  date: string
  spots: number
  capacity: number
  /** The screen record's version (its updated_at, ms) the capacity was read from. */
  version: number
  at: number
  hours?: Array<[number, number, number]>
}

/** One take a booking route's handler makes, as its route declares it (RouteDef.declares): its items, and a hold's time. */
export interface BookingAsk {
  items: BookingItem[]
  holdMs?: number
}

/** Where a booking does not fit: the screen's position in the request, its day, and the hour for a daypart line. */
export interface Shortfall {
  at: number
  screen: string
  date: string
  free: number
  asked: number
  hour?: number
}

/** What deciding a claim's part did. */
export type ClaimOutcome =
  | { ok: true }
  | { ok: false, reason: 'capacity_unavailable', short: Shortfall }
  | { ok: false, reason: 'claim_gone' | 'expired' | 'settled' | 'pending' | 'wrong_partition' | 'stale_screen' | 'duplicate' | 'decided' | 'not_the_coordinator' | 'not_due' | 'unknown' }

/**
 * The items of one claim that fall in one partition of the screens: counted while tentative (its claim not decided
 * yet) and taken, not once dropped (aborted, released); a dropped part stays, so a take landing after it takes nothing.
 */
export interface ClaimPart {
  items: BookingItem[]
  state: 'tentative' | 'taken' | 'dropped'
}

/** A claim's life (src/campaigns/capacity.ts stepClaim), with the partitions its parts are in. */
export interface ClaimRecord {
  state: 'pending' | 'held' | 'firm' | 'given' | 'expired' | 'aborted'
  parts: number[]
  /** The node, in one life of its process, that declared it: only it commits. */
  node: string
  incarnation: string
  intent_at: number
  /** Past intent_at plus this, anyone may abort it while it is pending. */
  timeout_ms: number
  /** A hold: how long it is held once committed, and when it lapses unless kept. */
  hold_ms?: number
  lapses_at?: number
  /** The last date it books (claims declared before it was recorded have none, and stay). */
  last_day?: string
}

/**
 * A campaign's money as pacing reads it (campaigns/budget.ts ledgerOf): spend over every node, today's spend, and the
 * budget this node's bids in flight hold (the exchange path).
 */
export interface CampaignLedger {
  spent_micros: number
  reserved_micros: number
  /** UTC date of day_spent_micros. */
  day: string
  day_spent_micros: number
  /** A cluster node: what it may still commit of the budget, its leases less its spend and what its bids hold. */
  lease_left_micros?: number
}

/** Budget this node's exchange bids in flight hold for a campaign, until they are billed, lose or expire. */
export interface HeldBudget {
  reserved_micros: number
}

/**
 * What a campaign delivered through one node, and what that cost: only that node writes its row, so plays on two
 * nodes never overwrite each other. Its spend counts against the campaign's budget and (today's) pace.
 */
export interface CampaignDelivery {
  impressions: number
  spent_micros: number
  /** UTC date of day_spent_micros. */
  day: string
  day_spent_micros: number
  /** When this node recorded the campaign's first impression (until then, when the row was made). */
  started_at: string
  /** A cluster node: the part of the budget granted to this node (src/cluster/budget-grants.ts). */
  leased_micros?: number
  /** The grants' log sequence of the last grant counted in leased_micros. */
  leased_seq?: number
}

/** The campaigns domain's tables (src/store/tables.ts). */
export const campaignTables = {
  campaigns: cachedTable<CampaignRecord>({ name: 'campaigns', replication: 'record', owners: ['src/campaigns/'] }),
  /** [campaign_id, node id] -> what the campaign delivered through that node (src/campaigns/delivery.ts). */
  campaignDelivery: table<CampaignDelivery, [string, string]>({ name: 'campaign_delivery', ordered: true, replication: 'quorum', owners: ['src/campaigns/delivery.ts'] }),
  assignments: table<AssignmentRecord>({ name: 'assignments', replication: 'record', owners: ['src/campaigns/'] }),
  reservations: table<ReservationRecord>({ name: 'reservations', replication: 'quorum', owners: ['src/campaigns/'] }),
  deals: cachedTable<DealRecord>({ name: 'deals', replication: 'record', owners: ['src/campaigns/'] }),
  // Screen time's rows: written where bookings are decided, in the request's transaction on a node alone, by the
  // logs' apply on every node of a cluster (capacity-logs.ts), so never replicated as rows.
  /** [screen_id, date] -> spots taken by placements, held reservations and guaranteed deals. */
  booked: table<number, [string, string]>({ name: 'booked', ordered: true, replication: 'local', owners: ['src/campaigns/'] }),
  /** [screen_id, date, hour] -> spots of that day booked in that hour by guaranteed lines with dayparts. */
  bookedHours: table<number, [string, string, number]>({ name: 'booked_hours', ordered: true, replication: 'local', owners: ['src/campaigns/'] }),
  /**
   * [partition, date, screen_id] -> 1: the screen-days with spots booked, by the partition that books them, in date
   * order, so that each partition removes its past days (capacity.ts sweepPastDays).
   */
  bookedDays: table<1, [number, string, string]>({ name: 'booked_days', ordered: true, replication: 'local', owners: ['src/campaigns/'] }),
  /** [screen_id, start_date, assignment_id] -> assignment_id: what each screen plays (the player feed reads it). */
  placements: table<string, [string, string, string]>({ name: 'placements', ordered: true, replication: 'record', owners: ['src/campaigns/'] }),
  /** [claim, partition] -> what the claim booked in that partition of the screens (src/campaigns/capacity.ts). */
  capacityParts: table<ClaimPart, [string, number]>({ name: 'capacity_parts', ordered: true, shapes: true, replication: 'local', owners: ['src/campaigns/'] }),
  /** claim -> its life. */
  capacityClaims: table<ClaimRecord>({ name: 'capacity_claims', shapes: true, replication: 'local', owners: ['src/campaigns/'] }),
  /** [lapses_at ms, claim] -> true: held claims in the order they lapse. */
  capacityLapses: table<true, [number, string]>({ name: 'capacity_lapses', ordered: true, replication: 'local', owners: ['src/campaigns/'] }),
  /**
   * [log, ended at, claim, 'claim' or the part's partition] -> true: claims that ended and parts that were dropped, in
   * the order a log removes them (capacity.ts sweepEnded); the log is a partition's number or 'claims'.
   */
  capacityEnded: table<true, [number | 'claims', number, string, number | 'claim']>({ name: 'capacity_ended', ordered: true, replication: 'local', owners: ['src/campaigns/'] }),
  /** claim -> true: claims of several partitions pending, or whose parts may not follow their last move yet (capacity-logs.ts). */
  capacityOpen: table<true>({ name: 'capacity_open', replication: 'local', owners: ['src/campaigns/'] }),
  /** screen_id -> the newest version of the screen a take in its partition was read from. */
  capacityScreens: table<number>({ name: 'capacity_screens', replication: 'local', owners: ['src/campaigns/'] }),
  /** [expires ms, reservation_id] -> reservation_id: holds in expiry order, derived on each node (holds.ts). */
  holds: table<string, [number, string]>({ name: 'holds', ordered: true, replication: 'local', owners: ['src/campaigns/'] }),
  /** campaign_id -> the budget this node's exchange bids in flight hold (its spend is in campaignDelivery). */
  ledgers: table<HeldBudget>({ name: 'ledgers', shapes: true, replication: 'local', owners: ['src/campaigns/'] })
}
