// Inventory's storage shapes: what the store's partner, screen, FEIN and adslot-index tables hold. A leaf: the store
// reads these types, and nothing here reads the store.
import type { Display, OperatingHours, VenueType } from '../generated/types.js'

/** The FEIN audience signals a sensor screen reports (their freshness rules are FRESHNESS in fein.ts). */
export type Signal = 'live_face_count' | 'attention_score' | 'dominant_emotion' | 'crowd_density' | 'purchase_intent' | 'ad_receptivity' | 'dwell_time_ms' | 'income_level'

/** An hour of measurements: [hour start (ms), face count sum, attention sum, samples, VAS seconds, VAS plays]. */
export type HourBucket = [number, number, number, number, number, number]

/** What is stored per sensor screen. */
export interface FeinState {
  values: Partial<Record<Signal, number | string | null>>
  at: Partial<Record<Signal, number>>
  last_updated: number | null
  /** Up to 7 days of hourly buckets, oldest first. */
  hours: HourBucket[]
}

/**
 * The adslots order as an LMDB key: [source, quality rank, -vas_7d, screen_id]. A page is one range read over
 * ordered keys: no sort, no decoding of screen records, and a cursor is simply the last key.
 */
export type IndexKey = [source: number, rank: number, negVas: number, screenId: string]

/** A key a screen held before it moved, with the adslots version it held it from (src/inventory/adslot-versions.ts). */
export type PastKey = [source: number, rank: number, negVas: number, screenId: string, since: number]

/**
 * What filters need, stored as the index value so that a page scan never opens the screen record:
 * [venue_type, country, state, city (lower case), updated_at ms, has sensors, portrait, max age rank,
 *  blocks alcohol, blocks gambling, floor CPM, online, and the adslots version the screen has held this key since
 *  (src/inventory/adslot-versions.ts; absent on entries older than versions, which count as held since 0)].
 */
export type IndexTuple = [string, string, string, string, number, 0 | 1, 0 | 1, number, 0 | 1, 0 | 1, number, 0 | 1, number?]

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
  /**
   * On a cluster, the node that recorded the last heartbeat (CLUSTER_NODE_ID): the one that takes the screen offline
   * when heartbeats stop.
   */
  node?: string
  /** When it last went offline (heartbeats stopped, or its player page closed). */
  offline_at?: number
  /** Heartbeats per hour over the last day: [hour start ms, count]. */
  hours: Array<[number, number]>
}
