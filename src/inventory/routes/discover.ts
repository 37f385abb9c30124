import type { Deps } from '../../deps.js'
import type { DiscoverRequest, DiscoverResult } from '../../generated/types.js'
import { ok, route, type RouteDef } from '../../http/route.js'
import { qualityOf, vasOf } from '../adslot-index.js'
import { adslotsQuery, discover } from '../discover.js'
import { summaryOf } from '../rows.js'

/** POST /openrtb/v2/discover: natural-language inventory search, read offline, with the reading shown. */
export function discoverRoute ({ store, inventory }: Deps): RouteDef {
  return route<DiscoverRequest>({
    method: 'post',
    path: '/openrtb/v2/discover',
    summary: 'Natural-language inventory search',
    tag: 'Inventory',
    envelope: 'flat',
    auth: 'seat',
    scope: 'inventory:read',
    rateGroup: 'inventory',
    body: 'DiscoverRequest',
    data: 'DiscoverResult',
    handler: (ctx) => {
      const enabled = inventory.sourcesEnabled()
      const wanted = ctx.body.source === 'all' ? enabled : enabled.filter((s) => s === (ctx.body.source ?? 'owned'))
      const { interpretation, unrecognized, matches: scored } = discover(store, wanted, ctx.body.query, ctx.now)
      const limit = ctx.body.limit ?? 20
      const matches = scored.slice(0, limit).map((m) => {
        const screen = store.screens.get(m.key[3])!
        return { screen: { ...summaryOf(screen), data_quality: qualityOf(m.key[1]), vas_7d: vasOf(m.key[2]) }, score: m.score, reasons: m.reasons }
      })
      const result = { query: ctx.body.query, interpretation, unrecognized, matches, total_matches: scored.length, adslots_query: adslotsQuery(interpretation) }
      return ok(result as unknown as DiscoverResult)
    }
  })
}
