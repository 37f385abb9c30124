// Inventory's storage shapes: what the store's FEIN and adslot-index tables hold. A leaf: the store reads these
// types, and nothing here reads the store.

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

/**
 * What filters need, stored as the index value so that a page scan never opens the screen record:
 * [venue_type, country, state, city (lower case), updated_at ms, has sensors, portrait, max age rank,
 *  blocks alcohol, blocks gambling, floor CPM, online].
 */
export type IndexTuple = [string, string, string, string, number, 0 | 1, 0 | 1, number, 0 | 1, 0 | 1, number, 0 | 1]
