import { DAY, Reports } from '../../analytics/reports.js'
import { matchingScreens, normalizeTargeting } from '../../campaigns/targeting.js'
import type { Deps } from '../../deps.js'
import { ApiError } from '../../errors.js'
import type { ForecastRequest } from '../../generated/types.js'
import { ok, route, type RouteDef } from '../../http/route.js'
import { whenComputed } from '../answer.js'
import { forecastOf, historyQuery, HISTORY_DAYS } from '../forecast.js'

/** Screens a forecast looks at, at most; beyond this the matching count still counts them all. */
const MAX_SCREENS = 200_000
const MAX_FLIGHT_DAYS = 366

/**
 * POST /openrtb/v2/forecast (spec): impressions, likely win rate and average CPM for a targeting, budget and flight,
 * from the last 7 full days of ClickHouse rollups on the matching screens. The history is asked of ClickHouse per
 * targeting (held until ClickHouse answers, reused for REPORT_CACHE_SECONDS); budget and dates are applied to it
 * at once.
 */
export function forecastRoute ({ store, analytics, reports: cache, clock, config, inventory }: Deps): RouteDef {
  const reports = new Reports(analytics, config.clickhouseDatabase)
  return route<ForecastRequest>({
    method: 'post',
    path: '/openrtb/v2/forecast',
    summary: 'Forecast impressions, win rate and average CPM for a targeting, budget and dates',
    tag: 'Inventory',
    envelope: 'flat',
    auth: 'seat',
    scope: 'inventory:read',
    rateGroup: 'inventory',
    body: 'ForecastRequest',
    data: ['Forecast', 'ForecastNoMatch'],
    computed: true,
    errors: ['invalid_budget', 'invalid_date', 'service_unavailable'],
    handler: (ctx) => {
      const b = ctx.body
      const targeting = normalizeTargeting(b.targeting ?? {})
      const today = Math.floor(ctx.now / DAY) * DAY
      const start = b.start_date !== undefined ? Date.parse(`${b.start_date}T00:00:00Z`) : today + DAY
      const end = b.end_date !== undefined ? Date.parse(`${b.end_date}T00:00:00Z`) : start + HISTORY_DAYS * DAY
      if (start < today) throw new ApiError('invalid_date', 'start_date is in the past.', { param: 'start_date' })
      if (end < start) throw new ApiError('invalid_date', 'end_date is before start_date.', { param: 'end_date' })
      const days = Math.round((end - start) / DAY) + 1
      if (days > MAX_FLIGHT_DAYS) throw new ApiError('invalid_date', `A forecast covers at most ${MAX_FLIGHT_DAYS} days.`, { param: 'end_date' })
      const { ids, count } = matchingScreens(store, inventory.sourcesEnabled(), targeting, undefined, MAX_SCREENS)
      if (count === 0) return ok({ message: 'No screen matches this targeting.' })
      const history = historyQuery(reports, targeting, () => clock.now())
      return whenComputed(cache, history.key, history.compute, (ready) => ok(forecastOf(store, ids, count, ready, { budget_usd: b.budget_usd, start, end, ...(b.pricing_model !== undefined ? { pricing_model: b.pricing_model } : {}) }, ctx.now)))
    }
  })
}
