import { ApiError } from '../errors.js'
import type { Targeting } from '../generated/types.js'
import { SOURCE_ORDER, tupleMatches, type Source } from '../inventory/adslot-index.js'
import type { IndexKey, IndexTuple } from '../inventory/records.js'
import { isCountry, stateCode } from '../inventory/geo.js'
import type { Store } from '../store/store.js'

/** Validates targeting beyond its schema (known countries, state with a country); returns it normalized. */
export function normalizeTargeting (t: Targeting | undefined, param = 'targeting'): Targeting {
  const out: Targeting = { ...t }
  const countries = [...(t?.countries ?? []), ...(t?.country !== undefined ? [t.country] : [])].map((c) => c.toUpperCase())
  for (const c of countries) if (!isCountry(c)) throw new ApiError('invalid_parameter', `${c} is not an ISO 3166-1 alpha-2 country.`, { param: `${param}.country` })
  if (t?.country !== undefined) out.country = t.country.toUpperCase()
  if (t?.countries !== undefined) out.countries = t.countries.map((c) => c.toUpperCase())
  if (t?.state !== undefined) {
    if (countries.length !== 1) throw new ApiError('invalid_parameter', 'targeting.state needs exactly one country.', { param: `${param}.state` })
    out.state = stateCode(countries[0]!, t.state) ?? t.state.toUpperCase()
  }
  return out
}

/** Whether a screen's index entry matches the static part of a targeting (location, venue, ids, price, VAS). */
export function matchesEntry (t: Targeting, key: IndexKey, tuple: IndexTuple, maxCpm?: number): boolean {
  const countries = [...(t.countries ?? []), ...(t.country !== undefined ? [t.country] : [])]
  const venues = [...(t.venue_types ?? []), ...(t.venue_type !== undefined ? [t.venue_type] : [])]
  if (countries.length > 0 && !countries.includes(tuple[1])) return false
  if (venues.length > 0 && !venues.includes(tuple[0] as never)) return false
  if (t.screen_ids !== undefined && t.screen_ids.length > 0 && !t.screen_ids.includes(key[3])) return false
  if (!tupleMatches(tuple, { ...(t.state !== undefined ? { state: t.state } : {}), ...(t.city !== undefined ? { city: t.city.toLowerCase() } : {}), ...(maxCpm !== undefined ? { maxFloor: maxCpm } : {}) })) return false
  if (t.min_vas !== undefined && (key[2] >= 0 || -key[2] < t.min_vas)) return false
  return true
}

/** Screens of enabled sources matching a targeting, in adslots order: the first `limit` ids and the count. */
export function matchingScreens (store: Store, sources: Source[], t: Targeting, maxCpm?: number, limit = 100): { ids: string[], count: number } {
  const ids: string[] = []
  let count = 0
  for (const source of sources) {
    const s = SOURCE_ORDER[source]
    for (const { key, value } of store.adslotIndex.getRange({ start: [s], end: [s + 1] } as never)) {
      const k = key as unknown as IndexKey
      if (!matchesEntry(t, k, value, maxCpm)) continue
      if (ids.length < limit) ids.push(k[3])
      count++
    }
  }
  return { ids, count }
}
