// Campaigns' storage shapes: campaigns, their ledgers, assignments, reservations and deals as stored. A leaf.
import type { Assignment, Campaign, Deal, Reservation } from '../generated/types.js'

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
