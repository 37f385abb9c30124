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
}

export interface ReservationRecord extends Reservation {
  seat_id: string
  expires_ms: number
}

export interface DealRecord extends Deal {
  /** Guaranteed: spots booked per screen and day on approval. */
  booked_per_day?: number
  booked_screens?: string[]
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
  /** A cluster node: the part of the budget the engine granted this node (src/cluster/budget-leases.ts). */
  leased_micros?: number
}

/** The campaigns domain's tables (src/store/tables.ts). */
export const campaignTables = {
  campaigns: cachedTable<CampaignRecord>({ name: 'campaigns', replication: 'quorum', owners: ['src/campaigns/'] }),
  /** [campaign_id, node id] -> what the campaign delivered through that node (src/campaigns/delivery.ts). */
  campaignDelivery: table<CampaignDelivery, [string, string]>({ name: 'campaign_delivery', ordered: true, replication: 'quorum', owners: ['src/campaigns/delivery.ts'] }),
  assignments: table<AssignmentRecord>({ name: 'assignments', replication: 'quorum', owners: ['src/campaigns/'] }),
  reservations: table<ReservationRecord>({ name: 'reservations', replication: 'quorum', owners: ['src/campaigns/'] }),
  deals: cachedTable<DealRecord>({ name: 'deals', replication: 'quorum', owners: ['src/campaigns/'] }),
  /** [screen_id, date] -> spots taken by placements, held reservations and guaranteed deals. */
  booked: table<number, [string, string]>({ name: 'booked', ordered: true, replication: 'quorum', owners: ['src/campaigns/'] }),
  /** [screen_id, date, hour] -> spots of that day booked in that hour by guaranteed lines with dayparts. */
  bookedHours: table<number, [string, string, number]>({ name: 'booked_hours', ordered: true, replication: 'quorum', owners: ['src/campaigns/'] }),
  /** [screen_id, start_date, assignment_id] -> assignment_id: what each screen plays (the player feed reads it). */
  placements: table<string, [string, string, string]>({ name: 'placements', ordered: true, replication: 'quorum', owners: ['src/campaigns/'] }),
  /** [expires ms, reservation_id] -> reservation_id: holds in expiry order. */
  holds: table<string, [number, string]>({ name: 'holds', ordered: true, replication: 'quorum', owners: ['src/campaigns/'] }),
  /** campaign_id -> the budget this node's exchange bids in flight hold (its spend is in campaignDelivery). */
  ledgers: table<HeldBudget>({ name: 'ledgers', shapes: true, replication: 'local', owners: ['src/campaigns/'] })
}
