// Campaigns' storage shapes: campaigns, their ledgers, assignments, reservations and deals as stored. A leaf.
import type { Assignment, Campaign, Deal, Reservation } from '../generated/types.js'

/** A campaign with its owner; screens are computed per request, not stored. */
export interface CampaignRecord extends Omit<Campaign, 'screens'> {
  seat_id: string
  /** Set when the first impression is recorded (campaign.started). */
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

/** A campaign's money: spend, budget held by bids in flight (the exchange path), and today's spend for pacing. */
export interface CampaignLedger {
  spent_micros: number
  reserved_micros: number
  /** UTC date of day_spent_micros. */
  day: string
  day_spent_micros: number
}
