import { DAY, type Reports } from '../analytics/reports.js'
import type { Answer } from '../analytics/results.js'
import { iso } from '../clock.js'
import { capacityOn } from '../campaigns/capacity.js'
import type { Forecast, Targeting } from '../generated/types.js'
import { vas7d } from '../inventory/fein.js'
import { datesBetween } from '../inventory/hours.js'
import type { Store } from '../store/store.js'

/** Forecasts read this many full days of history (spec: 7 days of historical rollups). */
export const HISTORY_DAYS = 7

export type ScreenHistory = Awaited<ReturnType<Reports['screenHistory']>>
export type ReadyHistory = Extract<Answer<ScreenHistory>, { state: 'ready' }>

const round = (v: number, digits = 2) => Math.round(v * 10 ** digits) / 10 ** digits

/** The ClickHouse question a forecast for a targeting asks: its cache key and the query, over the last full days. */
export function historyQuery (reports: Reports, targeting: Targeting, now: () => number): { key: string, compute: () => Promise<ScreenHistory> } {
  const filters: Record<string, string> = {}
  if (targeting.venue_type !== undefined) filters.venue_type = targeting.venue_type
  if (targeting.country !== undefined) filters.country = targeting.country
  if (targeting.state !== undefined) filters.state = targeting.state
  if (targeting.city !== undefined) filters.city = targeting.city
  return {
    key: `forecast|${JSON.stringify(filters)}`,
    compute: () => {
      const today = Math.floor(now() / DAY) * DAY
      return reports.screenHistory({ from: today - HISTORY_DAYS * DAY, to: today - 1000 }, filters)
    }
  }
}

/**
 * Impressions, plays, win rate and average CPM for a budget over a flight (start..end, UTC day starts) on the matching
 * screens (ids, count of all), from their recent history: supply is the spots they decided per day lately, else their
 * open capacity; the price is what won lately, else their average floor.
 */
export function forecastOf (store: Store, ids: string[], count: number, history: ReadyHistory, b: { budget_usd: number, start: number, end: number, pricing_model?: Forecast['pricing_model'] }, now: number): Forecast {
  const days = Math.round((b.end - b.start) / DAY) + 1
  const matching = new Set(ids)
  const rows = history.data.filter((r) => matching.has(r.screen_id))
  const sum = (f: (r: typeof rows[number]) => number) => rows.reduce((s, r) => s + f(r), 0)
  const withHistory = rows.filter((r) => r.days >= HISTORY_DAYS).length
  const confidence: Forecast['confidence'] = withHistory / count >= 0.5 ? 'high' : rows.length / count >= 0.2 ? 'medium' : 'low'
  const screens = ids.map((id) => store.screens.get(id)).filter((s) => s !== undefined)
  const dates = datesBetween(iso(b.start).slice(0, 10), iso(b.end).slice(0, 10))
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
    const values = screens.map((s) => { const f = store.fein.get(s.screen_id); return f !== undefined && s.capabilities.fein ? vas7d(f, now) : null }).filter((v): v is number => v !== null)
    return values.length > 0 ? values.reduce((a, v) => a + v, 0) / values.length : null
  })()
  const forecastPlays = round(impressions / perPlay)
  const vasSeconds = vasPerPlay !== null ? round(forecastPlays * vasPerPlay) : null
  return {
    matching_screens: count,
    screens_with_history: withHistory,
    confidence,
    pricing_model: b.pricing_model ?? 'cpm',
    start_date: iso(b.start).slice(0, 10),
    end_date: iso(b.end).slice(0, 10),
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
}
