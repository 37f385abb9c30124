import { MARKET_MIN_SEATS, Reports } from '../../analytics/reports.js'
import type { Deps } from '../../deps.js'
import { ApiError } from '../../errors.js'
import type { DemandQuery, MarketQuery } from '../../generated/types.js'
import { route, type RouteDef } from '../../http/route.js'
import { stateCode } from '../../inventory/geo.js'
import taxonomy from '../../moderation/iab-taxonomy.json' with { type: 'json' }
import { answer, COMPUTED, windowOf } from '../answer.js'

const MAX_DAYS = 365
const DEFAULT_DAYS = 30
const NAMES = taxonomy as Record<string, string>

/**
 * Market intelligence (spec, Market intelligence): CPM benchmarks and demand across all seats, from ClickHouse
 * rollups, shared by every caller and refreshed every REPORT_CACHE_SECONDS (5 minutes).
 */
export function marketRoutes ({ analytics, reports: cache, clock, config, inventory }: Deps): RouteDef[] {
  const reports = new Reports(analytics, config.clickhouseDatabase)
  const common = { tag: 'Reporting', envelope: 'flat', auth: 'seat', scope: 'stats:read', rateGroup: 'reporting', errors: ['invalid_date', 'service_unavailable'] } as const
  const refresh = `Figures are aggregates over seats: a segment with bids from fewer than ${MARKET_MIN_SEATS} seats is left out, so none reveals one seat. Shared by every caller. ${COMPUTED} days: 1-365 (default 30).`
  return [
    route<undefined, MarketQuery>({
      ...common,
      method: 'get',
      path: '/openrtb/v2/market/cpm-benchmarks',
      summary: 'CPM benchmarks: p25, median, p75 and average by venue type, country, state and daypart, plus the market overview',
      description: `From accepted production bids. market_overview: supply-enabled screens now, the market fill rate (spots won by a bid / spots decided) and completion rate. ${refresh}`,
      querySchema: 'MarketQuery',
      data: 'CpmBenchmarks',
      computed: true,
      handler: (ctx) => {
        const q = ctx.q
        const country = q.country?.toUpperCase()
        if (q.state !== undefined && country === undefined) throw new ApiError('invalid_parameter', 'state needs country.', { param: 'state' })
        const filters: Record<string, string> = {}
        if (q.venue_type !== undefined) filters.venue_type = q.venue_type
        if (country !== undefined) filters.country = country
        if (q.state !== undefined) filters.state = stateCode(country!, q.state) ?? q.state.toUpperCase()
        if (q.daypart !== undefined) filters.daypart = q.daypart
        const days = q.days ?? DEFAULT_DAYS
        const supply = inventory.sourcesEnabled().reduce((sum, s) => sum + inventory.counts(s).total, 0)
        return answer(cache, `cpm|${days}|${JSON.stringify(filters)}`, () => reports.cpmBenchmarks(windowOf({ days }, clock.now(), MAX_DAYS, DEFAULT_DAYS).window, filters, supply))
      }
    }),
    route<undefined, DemandQuery>({
      ...common,
      method: 'get',
      path: '/openrtb/v2/market/demand-analysis',
      summary: 'Demand: top advertiser categories by bid volume, daypart curves, segment CPM premiums over the baseline',
      description: `Daypart curves give the average accepted CPM and the market fill rate for morning (06-12), afternoon (12-17), evening (17-22) and late_night (22-06), screen-local. Segment premiums compare each venue type's and country's average CPM with the market baseline, in percent. ${refresh}`,
      querySchema: 'DemandQuery',
      data: 'DemandAnalysis',
      computed: true,
      handler: (ctx) => {
        const filters: Record<string, string> = {}
        if (ctx.q.venue_type !== undefined) filters.venue_type = ctx.q.venue_type
        if (ctx.q.country !== undefined) filters.country = ctx.q.country.toUpperCase()
        const days = ctx.q.days ?? DEFAULT_DAYS
        return answer(cache, `demand|${days}|${JSON.stringify(filters)}`, () => reports.demand(windowOf({ days }, clock.now(), MAX_DAYS, DEFAULT_DAYS).window, filters, (id) => NAMES[id] ?? null))
      }
    })
  ]
}
