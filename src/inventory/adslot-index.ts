import type { Store } from '../store/store.js'
import type { IndexKey, IndexTuple, ScreenRecord } from './records.js'
import { QUALITY_RANK, type Quality } from './fein.js'

export const SOURCES = ['owned', 'partner'] as const
export type Source = typeof SOURCES[number]
export const SOURCE_ORDER: Record<Source, number> = { owned: 0, partner: 1 }

/** Where screens without any VAS sort: after every measured one. */
export const NO_VAS = 1e9

export const AGE_RANK = { G: 0, PG: 1, 'PG-13': 2, R: 3, 'NC-17': 4 } as const
const ALCOHOL = ['IAB8-5', 'IAB8-18', 'IAB8']
const GAMBLING = ['IAB9-7', 'IAB9']

export function indexKey (screen: ScreenRecord, quality: Quality, vas: number | null): IndexKey {
  return [SOURCE_ORDER[screen.source], QUALITY_RANK[quality], vas === null ? NO_VAS : keyPart(-vas), screen.screen_id]
}

/**
 * A number as an index key part: never -0, which ordered-binary encodes as a corrupt key (it decodes as other parts,
 * and a get or remove with the key read back misses it), so a VAS of 0 would strand an entry in the index.
 */
export function keyPart (x: number): number {
  return x + 0
}

/** A screen's index value; `since` is the adslots version it has held its key from (adslot-versions.ts). */
export function indexTuple (screen: ScreenRecord, online: boolean, since: number): IndexTuple {
  const blocked = new Set(screen.blocked_categories)
  return [
    screen.location.venue_type,
    screen.location.country,
    screen.location.state.toUpperCase(),
    screen.location.city.toLowerCase(),
    Date.parse(screen.updated_at),
    screen.capabilities.fein ? 1 : 0,
    screen.display.orientation === 'portrait' ? 1 : 0,
    AGE_RANK[screen.max_age_rating],
    ALCOHOL.some((c) => blocked.has(c)) ? 1 : 0,
    GAMBLING.some((c) => blocked.has(c)) ? 1 : 0,
    screen.floor_price_cpm,
    online ? 1 : 0,
    since
  ]
}

/** Filters evaluated on the index tuple. */
export interface TupleFilter {
  venueType?: string
  country?: string
  state?: string
  city?: string
  sinceMs?: number
  sensors?: boolean
  orientation?: 'landscape' | 'portrait'
  maxAgeRating?: keyof typeof AGE_RANK
  allowAlcohol?: boolean
  allowGambling?: boolean
  minFloor?: number
  maxFloor?: number
  online?: boolean
}

/** Whether a screen's tuple passes every tuple filter. */
export function tupleMatches (t: IndexTuple, f: TupleFilter): boolean {
  if (f.venueType !== undefined && t[0] !== f.venueType) return false
  if (f.country !== undefined && t[1] !== f.country) return false
  if (f.state !== undefined && t[2] !== f.state) return false
  if (f.city !== undefined && !t[3].includes(f.city)) return false
  if (f.sinceMs !== undefined && t[4] < f.sinceMs) return false
  if (f.sensors !== undefined && (t[5] === 1) !== f.sensors) return false
  if (f.orientation !== undefined && (t[6] === 1 ? 'portrait' : 'landscape') !== f.orientation) return false
  if (f.maxAgeRating !== undefined && t[7] < AGE_RANK[f.maxAgeRating]) return false
  if (f.allowAlcohol === true && t[8] === 1) return false
  if (f.allowGambling === true && t[9] === 1) return false
  if (f.minFloor !== undefined && t[10] < f.minFloor) return false
  if (f.maxFloor !== undefined && t[10] > f.maxFloor) return false
  if (f.online !== undefined && (t[11] === 1) !== f.online) return false
  return true
}

/** The quality a rank stands for. */
export function qualityOf (rank: number): Quality {
  return rank === 0 ? 'live' : rank === 1 ? 'historical' : 'none'
}

/** vas_7d from a key's -vas part. */
export function vasOf (negVas: number): number | null {
  return negVas === NO_VAS ? null : -negVas
}

/** A screen's entry in the adslots index: what deal and campaign targeting is matched against. */
export function indexEntryOf (store: Store, screenId: string): { key: IndexKey, tuple: IndexTuple } | undefined {
  const key = store.adslotPos.get(screenId) as IndexKey | undefined
  const tuple = key !== undefined ? store.adslotIndex.get(key) as IndexTuple | undefined : undefined
  return key !== undefined && tuple !== undefined ? { key, tuple } : undefined
}
