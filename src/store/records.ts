import type { Assignment, Campaign, Creative, CustomRateLimits, Deal, Display, OperatingHours, Reservation, Scope, SeatStatus, VenueType, Webhook, WebhookDelivery } from '../generated/types.js'
import type { FeinState } from '../inventory/records.js'

// Storage shapes. These are not wire objects (those live in schemas/): they hold what the wire never shows, such as
// key digests and callback URLs, and each route maps them to its schema'd response.

/** A buyer seat. Keyed by the lower-cased seat_id so that ids differing only in case cannot coexist. */
export interface SeatRecord {
  id: string
  seat_id: string
  company_name: string
  status: SeatStatus
  /** The status a suspended seat returns to when reinstated. */
  suspended_from?: SeatStatus
  openrtb_version: '2.5' | '2.6'
  contact_email: string
  billing_email: string
  notification_url?: string
  webhook_url?: string
  rate_limits: CustomRateLimits
  key_ids: string[]
  created_at: string
  updated_at: string
}

/** An API key. Only the SHA-256 digest of the key is stored; the key itself is shown once. */
export interface KeyRecord {
  key_id: string
  digest: string
  prefix: string
  kind: 'platform' | 'legacy'
  scopes: Scope[]
  seat_id?: string
  partner_id?: string
  label?: string
  created_at: string
  expires_at?: string
  revoked_at: string | null
  /** Seat keys: the key sealed with the key-encryption key (src/auth/sealed-keys.ts), so that it can sign legacy notifications. */
  sealed?: string
}

/** A screen-operator partner. */
export interface PartnerRecord {
  id: string
  name: string
  slug: string
  partner_type: string
  contact_email: string
  domain?: string
  seller_id: string
  /** Whether this partner's screens are owned inventory or curated resold (partner) inventory. */
  source: 'owned' | 'partner'
  created_at: string
}

/** A screen: a registered device with its location, display and the partner's settings. */
export interface ScreenRecord {
  screen_id: string
  partner_id: string
  device_id: string
  device_type: string
  name: string
  display: Display & { orientation: 'landscape' | 'portrait' }
  location: { lat: number, lng: number, venue_type: VenueType, venue_name?: string, address: string, city: string, state: string, country: string, zip?: string }
  capabilities: { fein: boolean, video: boolean, audio: boolean, touch: boolean }
  slot_duration_seconds: number
  floor_price_cpm: number
  image_url?: string
  operating_hours?: OperatingHours
  blocked_categories: string[]
  blocked_advertisers: string[]
  max_age_rating: 'G' | 'PG' | 'PG-13' | 'R' | 'NC-17'
  timezone: string
  auction_enabled: boolean
  source: 'owned' | 'partner'
  embed_token: string
  created_at: string
  updated_at: string
}

/** Heartbeat state of a screen, apart from the record so that heartbeats do not move updated_at. */
export interface ScreenStatus {
  last_heartbeat: number | null
  online: boolean
  /** When it last went offline (heartbeats stopped, or its player page closed). */
  offline_at?: number
  /** The device fingerprint its player page is bound to (the fp of the first page that opened embed_url). */
  player?: string
  /** Heartbeats per hour over the last day: [hour start ms, count]. */
  hours: Array<[number, number]>
}

/** A creative: the wire view plus who owns it and where its bytes are. */
export interface CreativeRecord extends Omit<Creative, 'upload'> {
  seat_id: string
  /** Object-store key of the asset, once it is stored. */
  object?: string
  /** Upload mode: until when the presigned PUT URL is valid (ms). */
  upload_expires_at?: number
}

/** A campaign with its owner; screens are computed per request, not stored. */
export interface CampaignRecord extends Omit<Campaign, 'screens'> {
  seat_id: string
  /** Set when the first impression is recorded (campaign.started). */
  started_at?: string
}

export interface AssignmentRecord extends Assignment {
  seat_id: string
}

/** A webhook subscription: the wire view plus its owner and its secret, sealed (never stored in the clear). */
export interface WebhookRecord extends Webhook {
  seat_id: string
  secret_sealed: string
}

/** A webhook delivery as the log keeps it for 7 days: the wire view plus its owner. */
export interface DeliveryRecord extends WebhookDelivery {
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
}

/** Where a spot came from, in waterfall order. closed: outside operating hours, nothing plays. */
export type Tier = 'guaranteed' | 'preferred' | 'pmp' | 'open_auction' | 'house' | 'closed'

/** A spot the waterfall gave a screen's player, kept until its play is reported (and then for the proof). */
export interface SpotRecord {
  spot_id: string
  screen_id: string
  tier: Tier
  decided_at: number
  starts_at: number
  duration_seconds: number
  status: 'served' | 'started' | 'completed'
  creative_id?: string
  adm?: string
  seat_id?: string
  assignment_id?: string
  campaign_id?: string
  deal_id?: string
  /** The winning bid: what the play is billed at and whom to tell. */
  bid?: StoredBid & { clearing: number }
  started_at?: number
  completed_at?: number
  /** Impressions the play counted (imp.qty.multiplier confirmed at render: live faces, at most what was offered). */
  multiplier?: number
  cost_micros?: number
}

/**
 * An outbound notice: an OpenRTB nurl, lurl or burl (GET), a legacy win/loss notification or a webhook delivery
 * (signed POSTs). A webhook delivery's id is its delivery id (del_...).
 */
export interface NoticeRecord {
  id: string
  kind: 'nurl' | 'lurl' | 'burl' | 'legacy' | 'webhook'
  url: string
  seat_id?: string
  /** legacy and webhook: the event name. */
  event?: string
  /** legacy: the JSON body. webhook: the JSON of its data; the envelope is built at each attempt, with its delivered_at. */
  body?: string
  /** legacy: the key that signs it when it is sent. */
  key_id?: string
  /** webhook: the subscription; absent for a delivery to the seat's webhook_url (signed with the seat's API key). */
  webhook_id?: string
  attempts: number
  created_at: number
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

export type { FeinState }

/** A domain event in the transactional outbox. */
export interface OutboxEvent {
  seq: number
  id: string
  type: string
  subject: string
  seat_id?: string
  at: string
  data: Record<string, unknown>
}

/** A stored response for an Idempotency-Key. */
export interface IdempotencyRecord {
  fingerprint: string
  status: number
  body: string
  headers: Record<string, string>
  expires_at: number
}

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

/** A campaign's money on the exchange path: spend, budget held by bids in flight, and today's spend for pacing. */
export interface CampaignLedger {
  spent_micros: number
  reserved_micros: number
  /** UTC date of day_spent_micros. */
  day: string
  day_spent_micros: number
}
