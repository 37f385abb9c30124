// Campaigns' storage shapes: campaigns, assignments, reservations and deals as stored. A leaf.
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
