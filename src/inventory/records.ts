// Inventory's storage shapes: what the store's partner, screen, FEIN and adslot-index tables hold. The store opens
// the tables declared here, and nothing here reads the store.
import type { Display, OperatingHours, VenueType } from '../generated/types.js'
import { cachedTable, table } from '../store/table.js'

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

/** The inventory domain's tables (src/store/tables.ts). */
export const inventoryTables = {
  partners: cachedTable<PartnerRecord>({ name: 'partners', replication: 'record', owners: ['src/inventory/'] }),
  partnerSlugs: table<string>({ name: 'partner_slugs', replication: 'record', owners: ['src/inventory/'] }),
  screens: cachedTable<ScreenRecord>({ name: 'screens', replication: 'quorum', owners: ['src/inventory/'] }),
  /** partner_id + NUL + device_id -> screen_id. */
  devices: table<string>({ name: 'devices', replication: 'quorum', owners: ['src/inventory/'] }),
  /** embed token -> screen_id; every player request reads it, so it is cached. */
  embeds: cachedTable<string>({ name: 'embeds', replication: 'quorum', owners: ['src/inventory/'] }),
  fein: cachedTable<FeinState>({ name: 'fein', replication: 'eventual', owners: ['src/inventory/'] }),
  status: table<ScreenStatus>({ name: 'status', replication: 'eventual', owners: ['src/inventory/'] }),
  /**
   * screen_id -> the device fingerprint its player page is bound to (the fp of the first page that opened embed_url).
   * Every spot request checks it and it changes only when a player binds or is released, so it is cached, apart from
   * the status every heartbeat rewrites.
   */
  players: cachedTable<string>({ name: 'players', replication: 'quorum', owners: ['src/inventory/'] }),
  /** The adslots order: [source, quality rank, -vas, screen_id] -> filter tuple (src/inventory/adslot-index.ts). */
  adslotIndex: table<IndexTuple, IndexKey>({ name: 'adslot_index', ordered: true, replication: 'local', owners: ['src/inventory/'] }),
  /** screen_id -> its current adslotIndex key. */
  adslotPos: table<IndexKey>({ name: 'adslot_pos', replication: 'local', owners: ['src/inventory/'] }),
  /** Keys screens held before they moved, kept for walks: [source, rank, -vas, screen_id, since] -> until version. */
  adslotPast: table<number, PastKey>({ name: 'adslot_past', ordered: true, replication: 'local', owners: ['src/inventory/'] }),
  /** [until version, screen_id] -> the adslotPast key it ended and when (ms): oldest first, for collection. */
  adslotPastEnds: table<[PastKey, number], [number, string]>({ name: 'adslot_past_ends', ordered: true, replication: 'local', owners: ['src/inventory/'] }),
  /** adslots version a walk started from -> when a page of it was last served (ms). */
  adslotWalks: table<number, number>({ name: 'adslot_walks', ordered: true, replication: 'local', owners: ['src/inventory/'] }),
  /** screen_id -> pre-encoded rows (src/inventory/rows.ts). */
  rows: cachedTable<string[]>({ name: 'rows', replication: 'local', owners: ['src/inventory/'] })
}
