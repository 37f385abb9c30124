import { iso } from '../../clock.js'
import type { Deps } from '../../deps.js'
import { ApiError } from '../../errors.js'
import type { Catalog, CatalogQuery, CatalogScreen } from '../../generated/types.js'
import { ok, route, type RouteDef } from '../../http/route.js'
import { SOURCE_ORDER, tupleMatches, type TupleFilter } from '../adslot-index.js'
import { isCountry, stateCode } from '../geo.js'
import type { Inventory } from '../inventory.js'
import { VENUES } from '../venues.js'
import type { ScreenRecord } from '../records.js'

const TTL_MS = 60_000

function row (inventory: Inventory, s: ScreenRecord): CatalogScreen {
  const status = inventory.statusOf(s.screen_id)
  return {
    screen_id: s.screen_id,
    name: s.name,
    source: s.source,
    location: { lat: s.location.lat, lng: s.location.lng, address: s.location.address, city: s.location.city, state: s.location.state, country: s.location.country, ...(s.location.zip !== undefined ? { zip: s.location.zip } : {}), timezone: s.timezone },
    venue: { type: s.location.venue_type, ...(s.location.venue_name !== undefined ? { name: s.location.venue_name } : {}), openooh: VENUES[s.location.venue_type].openooh },
    display: s.display,
    device: { type: s.device_type, status: inventory.statusName(status), last_heartbeat_at: status.last_heartbeat !== null ? iso(status.last_heartbeat) : null, fein: s.capabilities.fein },
    programmatic: { auction_enabled: s.auction_enabled, floor_price_cpm: s.floor_price_cpm, currency: 'USD', slot_duration_seconds: s.slot_duration_seconds, formats: s.capabilities.video ? ['image', 'video'] : ['image'], openrtb_version: '2.6' },
    content_rules: { blocked_categories: s.blocked_categories, blocked_advertisers: s.blocked_advertisers, max_age_rating: s.max_age_rating },
    updated_at: s.updated_at
  }
}

/**
 * GET /inventory/v1/screens: the public catalog of auction-enabled screens (spec, Public discovery), with a response
 * cache of a minute per query that says X-Cache: HIT or MISS.
 */
export function catalogRoute ({ inventory, shared }: Deps): RouteDef {
  const cache = new Map<string, { data: Catalog, until: number }>()
  const keep = (id: string, page: { data: Catalog, until: number }): void => {
    if ((cache.get(id)?.until ?? 0) >= page.until) return
    if (cache.size > 500) cache.clear()
    cache.set(id, page)
  }
  shared.on('catalog', (id, page) => keep(id, page as { data: Catalog, until: number }))
  return route<undefined, CatalogQuery>({
    method: 'get',
    path: '/inventory/v1/screens',
    summary: 'Public catalog of auction-enabled screens',
    tag: 'Discovery',
    envelope: 'nested',
    auth: 'none',
    rateGroup: 'public',
    querySchema: 'CatalogQuery',
    data: 'Catalog',
    cacheSeconds: 60,
    handler: (ctx) => {
      const q = ctx.q
      const filter: TupleFilter = {}
      if (q.country !== undefined) {
        if (!isCountry(q.country)) throw new ApiError('invalid_parameter', 'country must be an ISO 3166-1 alpha-2 code.', { param: 'country' })
        filter.country = q.country.toUpperCase()
      }
      if (q.state !== undefined) filter.state = (filter.country !== undefined ? stateCode(filter.country, q.state) : undefined) ?? q.state.toUpperCase()
      if (q.city !== undefined) filter.city = q.city.toLowerCase()
      if (q.venue_type !== undefined) filter.venueType = q.venue_type.toLowerCase()
      if (q.min_floor_cpm !== undefined) filter.minFloor = q.min_floor_cpm
      if (q.max_floor_cpm !== undefined) filter.maxFloor = q.max_floor_cpm
      if (filter.minFloor !== undefined && filter.maxFloor !== undefined && filter.minFloor > filter.maxFloor) throw new ApiError('invalid_parameter', 'min_floor_cpm is above max_floor_cpm.', { param: 'min_floor_cpm' })
      if (q.online !== undefined) filter.online = q.online
      const sources = inventory.sourcesEnabled()
      const id = JSON.stringify([filter, q.limit, q.offset, sources])
      const hit = cache.get(id)
      if (hit !== undefined && hit.until > ctx.now) return ok(hit.data, 200, { 'X-Cache': 'HIT' })
      const limit = q.limit ?? 100
      const offset = q.offset ?? 0
      const screens: CatalogScreen[] = []
      let total = 0
      // In screen_id order, which no signal moves: offsets stay put while FEIN streams (the adslots order would not).
      for (const source of sources) {
        const s = SOURCE_ORDER[source]
        for (const { key: id, value: key } of inventory.store.adslotPos.getRange()) {
          if (key[0] !== s) continue
          const tuple = inventory.store.adslotIndex.get(key)
          if (tuple === undefined || !tupleMatches(tuple, filter)) continue
          if (total >= offset && screens.length < limit) {
            const screen = inventory.store.screens.get(id)
            if (screen !== undefined) screens.push(row(inventory, screen))
          }
          total++
        }
      }
      const data: Catalog = { screens, total, limit, offset }
      keep(id, { data, until: ctx.now + TTL_MS })
      shared.send('catalog', id, { data, until: ctx.now + TTL_MS })
      return ok(data, 200, { 'X-Cache': 'MISS' })
    }
  })
}
