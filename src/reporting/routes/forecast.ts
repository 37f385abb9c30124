import { DAY, Reports } from '../../analytics/reports.js'
import { iso } from '../../clock.js'
import { capacityOn } from '../../campaigns/screen-bookings.js'
import { matchingScreens, normalizeTargeting } from '../../campaigns/targeting.js'
import type { Deps } from '../../deps.js'
import { ApiError } from '../../errors.js'
import type { Forecast, ForecastRequest } from '../../generated/types.js'
import { ok, route, type RouteDef } from '../../http/route.js'
import { whenComputed } from '../answer.js'
import { vas7d } from '../../inventory/fein.js'
import { datesBetween } from '../../inventory/hours.js'

/** Forecasts read this many full days of history (spec: 7 days of historical rollups). */
const HISTORY_DAYS = 7
/** Screens a forecast looks at, at most; beyond this the matching count still counts them all. */
const MAX_SCREENS = 200_000
const MAX_FLIGHT_DAYS = 366

const round = (v: number, digits = 2) => Math.round(v * 10 ** digits) / 10 ** digits

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
    description: 'targeting: venue_type, country (alpha-2), state, city (partial); omitted means all inventory. budget_usd at least 0.01 (400 invalid_budget). start_date defaults to tomorrow and may not be in the past; end_date defaults to 7 days after start_date (400 invalid_date; at most 366 days). pricing_model: cpm (default) or vas_cpm (also prices per 1000 attention seconds). Matching no screen answers only {message}. confidence: high when 50%+ of matching screens have 7 days of data, medium when 20%+ have some, else low; without history the supply is the screens\' open capacity and the price their floor. The history is computed by ClickHouse and cached for REPORT_CACHE_SECONDS: a targeting not asked before waits for it (up to REPORT_WAIT_MS, then 202 pending with Retry-After).',
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
      const filters: Record<string, string> = {}
      if (targeting.venue_type !== undefined) filters.venue_type = targeting.venue_type
      if (targeting.country !== undefined) filters.country = targeting.country
      if (targeting.state !== undefined) filters.state = targeting.state
      if (targeting.city !== undefined) filters.city = targeting.city
      const historyWindow = (now: number) => ({ from: Math.floor(now / DAY) * DAY - HISTORY_DAYS * DAY, to: Math.floor(now / DAY) * DAY - 1000 })
      return whenComputed(cache, `forecast|${JSON.stringify(filters)}`, () => reports.screenHistory(historyWindow(clock.now()), filters), (history) => {
        const matching = new Set(ids)
        const rows = history.data.filter((r) => matching.has(r.screen_id))
        const sum = (f: (r: typeof rows[number]) => number) => rows.reduce((s, r) => s + f(r), 0)
        const withHistory = rows.filter((r) => r.days >= HISTORY_DAYS).length
        const confidence: Forecast['confidence'] = withHistory / count >= 0.5 ? 'high' : rows.length / count >= 0.2 ? 'medium' : 'low'
        const screens = ids.map((id) => store.screens.get(id)).filter((s) => s !== undefined)
        const dates = datesBetween(iso(start).slice(0, 10), iso(end).slice(0, 10))
        const spots = sum((r) => r.spots)
        const plays = sum((r) => r.plays)
        const perPlay = plays > 0 ? sum((r) => r.impressions) / plays : 1
        // Supply over the flight: the spots these screens decided per day lately, else their open capacity.
        const supplySpots = spots > 0 ? (spots / HISTORY_DAYS) * days : screens.reduce((s, screen) => s + dates.reduce((d, date) => d + capacityOn(screen, date), 0), 0)
        const wins = sum((r) => r.wins)
        const accepted = sum((r) => r.accepted)
        const winRate = accepted > 0 ? wins / accepted : null
        const floor = screens.length > 0 ? screens.reduce((s, screen) => s + screen.floor_price_cpm, 0) / screens.length : 0
        const avgCpm = wins > 0 ? sum((r) => r.win_cpm) / wins : floor + 0.01
        const achievable = supplySpots * perPlay * (winRate ?? 1)
        const affordable = avgCpm > 0 ? (b.budget_usd / avgCpm) * 1000 : Infinity
        const impressions = Math.floor(Math.min(achievable, affordable))
        const spend = round((impressions * avgCpm) / 1000, 6)
        const vasPerPlay = (() => {
          const values = screens.map((s) => { const f = store.fein.get(s.screen_id); return f !== undefined && s.capabilities.fein ? vas7d(f, ctx.now) : null }).filter((v): v is number => v !== null)
          return values.length > 0 ? values.reduce((a, v) => a + v, 0) / values.length : null
        })()
        const forecastPlays = round(impressions / perPlay)
        const vasSeconds = vasPerPlay !== null ? round(forecastPlays * vasPerPlay) : null
        const forecast: Forecast = {
          matching_screens: count,
          screens_with_history: withHistory,
          confidence,
          pricing_model: b.pricing_model ?? 'cpm',
          start_date: iso(start).slice(0, 10),
          end_date: iso(end).slice(0, 10),
          days,
          impressions,
          plays: forecastPlays,
          vas_seconds: vasSeconds,
          win_rate: winRate !== null ? round(winRate, 4) : null,
          avg_cpm: round(avgCpm, 4),
          avg_vas_cpm: vasSeconds !== null && vasSeconds > 0 ? round((spend / vasSeconds) * 1000, 4) : null,
          estimated_spend_usd: spend,
          budget_usd: b.budget_usd,
          budget_limited: affordable < achievable,
          generated_at: iso(history.computedAt),
          stale: history.stale
        }
        return ok(forecast)
      })
    }
  })
}
