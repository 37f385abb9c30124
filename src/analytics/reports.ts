import { iso } from '../clock.js'
import type { CpmBenchmarks, DemandAnalysis, FunnelReport, ReportSummary, ScreensReport, SeatStats, TimeseriesReport } from '../generated/types.js'
import type { AnalyticsSource } from './source.js'
import { limit, seconds, type Params } from './sql.js'

/** A report window: [from, to] in ms, inclusive. */
export interface Window {
  from: number
  to: number
}

/** Segments with bids from fewer seats than this are not shown in market figures, so none reveals one seat. */
export const MARKET_MIN_SEATS = 3

const HOUR = 3_600_000
const DAY = 24 * HOUR

type Row = Record<string, unknown>
const n = (v: unknown): number => (typeof v === 'number' ? v : Number(v ?? 0)) || 0
const ratio = (a: number, b: number, digits = 4): number | null => (b > 0 ? Math.round((a / b) * 10 ** digits) / 10 ** digits : null)
const money = (v: number): number => Math.round(v * 1e6) / 1e6
const cpm = (v: number | null): number | null => (v === null || !Number.isFinite(v) ? null : Math.round(v * 1e4) / 1e4)

/** The rollup hours of a window; its bounds are the {from:UInt32} and {to:UInt32} parameters of span(). */
const HOURS = 'hour >= toStartOfHour(toDateTime({from:UInt32})) AND hour <= toDateTime({to:UInt32})'
/** One seat's rollup hours; the seat is the {seat:String} parameter. */
const SEAT_HOURS = `seat_id = {seat:String} AND ${HOURS}`

/** The parameters HOURS reads. */
function span (w: Window): Params {
  return { from: seconds(w.from), to: seconds(w.to) }
}

/** `column = {column:String}` for each filter given; the columns are the report's own filter names, never input. */
function equal (filters: Record<string, string | undefined>): { clauses: string[], params: Record<string, string> } {
  const params: Record<string, string> = {}
  for (const [column, value] of Object.entries(filters)) if (value !== undefined) params[column] = value
  return { clauses: Object.keys(params).map((column) => `${column} = {${column}:String}`), params }
}

/** What every report carries about itself; generated_at and stale are set when the answer is served. */
function meta (w: Window): { from: string, to: string, generated_at: string, stale: boolean } {
  return { from: iso(w.from), to: iso(w.to), generated_at: '', stale: false }
}

/**
 * Asks ClickHouse for the seat's reports, from the rollups; the one exception is a media buy's delivery by creative
 * (creativeDelivery), which reads the plays and proofs event tables narrowed to its creatives and flight.
 */
export class Reports {
  readonly #analytics: AnalyticsSource
  readonly #db: string

  constructor (analytics: AnalyticsSource, database: string) {
    this.#analytics = analytics
    this.#db = database
  }


  /** The funnel: totals, rates, the top 50 screens by requests, and a series. */
  async funnel (seat: string, w: Window, granularity: 'hourly' | 'daily' | 'flight', screenId: string | undefined): Promise<FunnelReport> {
    const where = `${SEAT_HOURS}${screenId !== undefined ? ' AND screen_id = {screen:String}' : ''}`
    const params = { ...span(w), seat, ...(screenId !== undefined ? { screen: screenId } : {}) }
    const measures = 'sumMerge(requests) AS request, sumMerge(bids) AS bid_received, sumMerge(starts) AS render_started, sumMerge(completes) AS play_completed'
    const bucket = granularity === 'hourly' ? 'hour' : granularity === 'daily' ? 'toStartOfDay(hour)' : 'toDateTime({from:UInt32})'
    const [totals, screens, series] = await Promise.all([
      this.#analytics.query(`SELECT ${measures} FROM ${this.#db}.screen_hourly WHERE ${where}`, params),
      this.#analytics.query(`SELECT screen_id, ${measures} FROM ${this.#db}.screen_hourly WHERE ${where} AND screen_id != '' GROUP BY screen_id ORDER BY request DESC, play_completed DESC, screen_id LIMIT 50`, params),
      this.#analytics.query(`SELECT toUInt32(${bucket}) AS period, ${measures} FROM ${this.#db}.screen_hourly WHERE ${where} GROUP BY period ORDER BY period`, params)
    ])
    const stages = (r: Row | undefined) => ({ request: n(r?.request), bid_received: n(r?.bid_received), render_started: n(r?.render_started), play_completed: n(r?.play_completed) })
    const rates = (s: ReturnType<typeof stages>) => ({ bid_rate: ratio(s.bid_received, s.request), fill_rate: ratio(s.render_started, s.bid_received), start_to_complete_rate: ratio(s.play_completed, s.render_started) })
    const total = stages(totals[0])
    return {
      ...meta(w),
      granularity,
      stages: total,
      rates: rates(total),
      screens: screens.map((r) => { const s = stages(r); return { screen_id: String(r.screen_id), ...s, rates: rates(s) } }),
      series: fill(series, w, granularity, (r) => stages(r), stages(undefined))
    }
  }

  /** The seat's totals in the window. */
  async summary (seat: string, w: Window): Promise<ReportSummary> {
    const params = { ...span(w), seat }
    const [totals, screens] = await Promise.all([
      this.#analytics.query(`SELECT sumMerge(requests) AS requests, sumMerge(bids) AS bids, sumMerge(accepted) AS accepted, sumMerge(wins) AS wins, sumMerge(win_cpm) AS win_cpm, sumMerge(completes) AS plays, sumMerge(impressions) AS impressions, sumMerge(spend) AS spend FROM ${this.#db}.seat_hourly WHERE ${SEAT_HOURS}`, params),
      this.#analytics.query(`SELECT count() AS unique_screens FROM (SELECT screen_id, sumMerge(completes) AS c FROM ${this.#db}.screen_hourly WHERE ${SEAT_HOURS} AND screen_id != '' GROUP BY screen_id) WHERE c > 0`, params)
    ])
    const t = totals[0] ?? {}
    const spend = money(n(t.spend))
    return {
      ...meta(w),
      requests: n(t.requests),
      bids: n(t.bids),
      accepted: n(t.accepted),
      wins: n(t.wins),
      plays: n(t.plays),
      impressions: money(n(t.impressions)),
      unique_screens: n(screens[0]?.unique_screens),
      spend_usd: spend,
      cpm: cpm(ratio(spend * 1000, n(t.impressions), 6)),
      avg_win_cpm: cpm(ratio(n(t.win_cpm), n(t.wins), 6)),
      fill_rate: ratio(n(t.wins), n(t.bids)),
      win_rate: ratio(n(t.wins), n(t.accepted))
    }
  }

  /** What ClickHouse adds to GET /stats: requests, plays, impressions and bid latency percentiles of the window. */
  async delivery (seat: string, w: Window): Promise<Omit<SeatStats['delivery'], 'status' | 'generated_at' | 'stale'>> {
    const rows = await this.#analytics.query(`SELECT sumMerge(requests) AS requests, sumMerge(starts) AS render_started, sumMerge(completes) AS plays, sumMerge(impressions) AS impressions, sumMerge(accepted) AS accepted, quantilesMerge(0.5, 0.95, 0.99)(latency_q) AS latency FROM ${this.#db}.seat_hourly WHERE ${SEAT_HOURS}`, { ...span(w), seat })
    const r = rows[0] ?? {}
    const q = n(r.accepted) > 0 && Array.isArray(r.latency) ? r.latency.map((v) => (Number.isFinite(Number(v)) && v !== null ? Math.round(Number(v) * 10) / 10 : null)) : [null, null, null]
    return { requests: n(r.requests), render_started: n(r.render_started), plays: n(r.plays), impressions: money(n(r.impressions)), latency_ms: { p50: q[0] ?? null, p95: q[1] ?? null, p99: q[2] ?? null } }
  }

  /** Per screen, sorted. */
  async screens (seat: string, w: Window, sort: ScreensReport['sort'], top: number): Promise<ScreensReport> {
    const order = { impressions: 'impressions', plays: 'plays', spend: 'spend', bids: 'bids', requests: 'requests' }[sort as 'impressions']
    const rows = await this.#analytics.query(
      `SELECT screen_id, any(venue_type) AS venue_type, any(city) AS city, any(state) AS state, any(country) AS country, sum(r) AS requests, sum(b) AS bids, sum(wi) AS wins, sum(c) AS plays, sum(i) AS impressions, sum(sp) AS spend, countIf(c > 0) AS hours_active FROM (` +
      `SELECT screen_id, hour, venue_type, city, state, country, sumMerge(requests) AS r, sumMerge(bids) AS b, sumMerge(wins) AS wi, sumMerge(completes) AS c, sumMerge(impressions) AS i, sumMerge(spend) AS sp FROM ${this.#db}.screen_hourly ` +
      `WHERE ${SEAT_HOURS} AND screen_id != '' GROUP BY screen_id, hour, venue_type, city, state, country) GROUP BY screen_id ORDER BY ${order} DESC, screen_id LIMIT ${limit(top)}`, { ...span(w), seat })
    return {
      ...meta(w),
      sort,
      screens: rows.map((r) => ({
        screen_id: String(r.screen_id), venue_type: String(r.venue_type), city: String(r.city), state: String(r.state), country: String(r.country),
        requests: n(r.requests), bids: n(r.bids), wins: n(r.wins), plays: n(r.plays), impressions: money(n(r.impressions)), spend_usd: money(n(r.spend)),
        cpm: cpm(ratio(n(r.spend) * 1000, n(r.impressions), 6)), hours_active: n(r.hours_active)
      }))
    }
  }

  /** The seat's delivery per bucket. */
  async timeseries (seat: string, w: Window, granularity: 'hourly' | 'daily', screenId: string | undefined): Promise<TimeseriesReport> {
    const table = screenId !== undefined ? 'screen_hourly' : 'seat_hourly'
    const bucket = granularity === 'hourly' ? 'hour' : 'toStartOfDay(hour)'
    const rows = await this.#analytics.query(`SELECT toUInt32(${bucket}) AS period, sumMerge(requests) AS requests, sumMerge(bids) AS bids, sumMerge(accepted) AS accepted, sumMerge(wins) AS wins, sumMerge(completes) AS plays, sumMerge(impressions) AS impressions, sumMerge(spend) AS spend FROM ${this.#db}.${table} WHERE ${SEAT_HOURS}${screenId !== undefined ? ' AND screen_id = {screen:String}' : ''} GROUP BY period ORDER BY period`,
      { ...span(w), seat, ...(screenId !== undefined ? { screen: screenId } : {}) })
    const point = (r: Row | undefined) => ({ requests: n(r?.requests), bids: n(r?.bids), accepted: n(r?.accepted), wins: n(r?.wins), plays: n(r?.plays), impressions: money(n(r?.impressions)), spend_usd: money(n(r?.spend)), cpm: cpm(ratio(n(r?.spend) * 1000, n(r?.impressions), 6)) })
    return { ...meta(w), granularity, points: fill(rows, w, granularity, point, point(undefined)) }
  }

  /** CPM benchmarks across seats, with segments of fewer than MARKET_MIN_SEATS seats left out. */
  async cpmBenchmarks (w: Window, filters: { venue_type?: string, country?: string, state?: string, daypart?: string }, supplyScreens: number): Promise<CpmBenchmarks> {
    const dims = equal(filters)
    const where = [HOURS, ...dims.clauses].join(' AND ')
    const params = { ...span(w), ...dims.params }
    const measures = 'quantilesMerge(0.25, 0.5, 0.75)(bid_q) AS q, avgMerge(bid_avg) AS average, sumMerge(accepted) AS samples, uniqMerge(seats) AS seats'
    const by = (keys: string) => this.#analytics.query(`SELECT ${keys}, ${measures} FROM ${this.#db}.market_hourly WHERE ${where} GROUP BY ${keys} HAVING seats >= ${MARKET_MIN_SEATS} ORDER BY samples DESC, ${keys}`, params)
    const [overall, venues, countries, states, dayparts, overview] = await Promise.all([
      this.#analytics.query(`SELECT ${measures} FROM ${this.#db}.market_hourly WHERE ${where}`, params),
      by('venue_type'), by('country'), by('country, state'), by('daypart'),
      this.#analytics.query(`SELECT sumMerge(spots) AS spots, sumMerge(wins) AS wins, sumMerge(starts) AS starts, sumMerge(completes) AS completes FROM ${this.#db}.market_hourly WHERE ${where}`, params)
    ])
    const bench = (r: Row) => {
      const q = Array.isArray(r.q) ? r.q.map(Number) : []
      return { p25: cpm(q[0] ?? null), median: cpm(q[1] ?? null), p75: cpm(q[2] ?? null), average: cpm(n(r.average)), samples: n(r.samples) }
    }
    const o = overview[0] ?? {}
    const top = overall[0]
    return {
      ...meta(w),
      filters,
      overall: top !== undefined && n(top.seats) >= MARKET_MIN_SEATS ? bench(top) : null,
      by_venue_type: venues.map((r) => ({ venue_type: String(r.venue_type), ...bench(r) })),
      by_country: countries.map((r) => ({ country: String(r.country), ...bench(r) })),
      by_state: states.map((r) => ({ country: String(r.country), state: String(r.state), ...bench(r) })),
      by_daypart: dayparts.map((r) => ({ daypart: String(r.daypart), ...bench(r) })),
      market_overview: { supply_screens: supplyScreens, avg_fill_rate: ratio(n(o.wins), n(o.spots)), avg_completion_rate: ratio(n(o.completes), n(o.starts)) }
    }
  }

  /** Demand across seats: categories, daypart curves and segment premiums. */
  async demand (w: Window, filters: { venue_type?: string, country?: string }, categoryName: (id: string) => string | null): Promise<DemandAnalysis> {
    const dims = equal(filters)
    const params = { ...span(w), ...dims.params }
    const hourWhere = [HOURS, ...dims.clauses].join(' AND ')
    const dayWhere = ['day >= toDate(toDateTime({from:UInt32})) AND day <= toDate(toDateTime({to:UInt32}))', ...dims.clauses].join(' AND ')
    const [categories, totals, dayparts, venues, countries] = await Promise.all([
      this.#analytics.query(`SELECT category, sumMerge(bids) AS bids, sumMerge(accepted) AS accepted, sumMerge(bid_cpm) AS cpm_sum, uniqMerge(seats) AS seats FROM ${this.#db}.category_daily WHERE ${dayWhere} GROUP BY category HAVING seats >= ${MARKET_MIN_SEATS} ORDER BY bids DESC, category LIMIT 20`, params),
      this.#analytics.query(`SELECT sumMerge(bids) AS bids, avgMerge(bid_avg) AS average, uniqMerge(seats) AS seats FROM ${this.#db}.market_hourly WHERE ${hourWhere}`, params),
      this.#analytics.query(`SELECT daypart, sumMerge(bids) AS bids, avgMerge(bid_avg) AS average, sumMerge(spots) AS spots, sumMerge(wins) AS wins, uniqMerge(seats) AS seats FROM ${this.#db}.market_hourly WHERE ${hourWhere} AND daypart != '' GROUP BY daypart HAVING seats >= ${MARKET_MIN_SEATS} ORDER BY daypart`, params),
      this.#analytics.query(`SELECT venue_type AS value, sumMerge(bids) AS bids, avgMerge(bid_avg) AS average, uniqMerge(seats) AS seats FROM ${this.#db}.market_hourly WHERE ${hourWhere} AND venue_type != '' GROUP BY value HAVING seats >= ${MARKET_MIN_SEATS} ORDER BY bids DESC, value`, params),
      this.#analytics.query(`SELECT country AS value, sumMerge(bids) AS bids, avgMerge(bid_avg) AS average, uniqMerge(seats) AS seats FROM ${this.#db}.market_hourly WHERE ${hourWhere} AND country != '' GROUP BY value HAVING seats >= ${MARKET_MIN_SEATS} ORDER BY bids DESC, value`, params)
    ])
    const t = totals[0] ?? {}
    const baseline = n(t.seats) >= MARKET_MIN_SEATS ? cpm(n(t.average)) : null
    const allBids = n(t.bids)
    const premium = (dimension: 'venue_type' | 'country') => (r: Row) => {
      const avg = cpm(n(r.average))
      return { dimension, value: String(r.value), bids: n(r.bids), avg_cpm: avg, premium_pct: baseline !== null && baseline > 0 && avg !== null ? Math.round(((avg - baseline) / baseline) * 10_000) / 100 : null }
    }
    return {
      ...meta(w),
      filters,
      baseline_cpm: baseline,
      top_categories: categories.map((r) => ({ category: String(r.category), name: categoryName(String(r.category)), bids: n(r.bids), share: ratio(n(r.bids), allBids), avg_cpm: cpm(ratio(n(r.cpm_sum), n(r.accepted), 6)) })),
      daypart_curves: dayparts.map((r) => ({ daypart: String(r.daypart), bids: n(r.bids), avg_cpm: cpm(n(r.average)), fill_rate: ratio(n(r.wins), n(r.spots)) })),
      segment_premiums: [...venues.map(premium('venue_type')), ...countries.map(premium('country'))]
    }
  }

  /** The last full days of activity on screens matching location filters, per screen (all seats, for the forecast). */
  async screenHistory (w: Window, filters: { venue_type?: string, country?: string, state?: string, city?: string }): Promise<Array<{ screen_id: string, days: number, spots: number, wins: number, accepted: number, plays: number, impressions: number, win_cpm: number }>> {
    const { city, ...exact } = filters
    const dims = equal(exact)
    const where = [HOURS, "screen_id != ''", ...dims.clauses, ...(city !== undefined ? ['positionCaseInsensitive(city, {city:String}) > 0'] : [])].join(' AND ')
    const params = { ...span(w), ...dims.params, ...(city !== undefined ? { city } : {}) }
    const rows = await this.#analytics.query(
      `SELECT screen_id, uniqExact(toDate(hour)) AS days, sum(s) AS spots, sum(wi) AS wins, sum(a) AS accepted, sum(c) AS plays, sum(i) AS impressions, sum(wc) AS win_cpm FROM (` +
      `SELECT screen_id, hour, sumMerge(spots) AS s, sumMerge(wins) AS wi, sumMerge(accepted) AS a, sumMerge(completes) AS c, sumMerge(impressions) AS i, sumMerge(win_cpm) AS wc FROM ${this.#db}.screen_hourly WHERE ${where} GROUP BY screen_id, hour) ` +
      'WHERE s > 0 OR c > 0 OR a > 0 GROUP BY screen_id', params)
    return rows.map((r) => ({ screen_id: String(r.screen_id), days: n(r.days), spots: n(r.spots), wins: n(r.wins), accepted: n(r.accepted), plays: n(r.plays), impressions: n(r.impressions), win_cpm: n(r.win_cpm) }))
  }

  /**
   * Completed plays (with their impressions, spend and screens) and proofs of play (with how many passed GIVT
   * filtering) of a seat's creatives in the window, per creative: what an AI buying agent's media buy delivered.
   */
  async creativeDelivery (seat: string, creativeIds: string[], w: Window): Promise<Array<{ creative_id: string, plays: number, impressions: number, spend: number, screens: number, proofs: number, givt_passed: number }>> {
    if (creativeIds.length === 0) return []
    const params = { from: seconds(w.from), to: seconds(w.to), seat, creatives: creativeIds }
    const when = 'ts >= toDateTime({from:UInt32}) AND ts <= toDateTime({to:UInt32})'
    const [plays, proofs] = await Promise.all([
      this.#analytics.query(`SELECT creative_id, count() AS plays, sum(multiplier) AS impressions, sum(cost_usd) AS spend, uniqExact(screen_id) AS screens FROM ${this.#db}.plays WHERE seat_id = {seat:String} AND stage = 'play_completed' AND creative_id IN (SELECT arrayJoin({creatives:Array(String)})) AND ${when} GROUP BY creative_id`, params),
      this.#analytics.query(`SELECT ad_id AS creative_id, count() AS proofs, sum(givt) AS givt_passed FROM ${this.#db}.proofs WHERE ad_id IN (SELECT arrayJoin({creatives:Array(String)})) AND ${when} GROUP BY ad_id`, params)
    ])
    const proven = new Map(proofs.map((r) => [String(r.creative_id), r]))
    return creativeIds.map((id) => {
      const p = plays.find((r) => String(r.creative_id) === id)
      const q = proven.get(id)
      return { creative_id: id, plays: n(p?.plays), impressions: money(n(p?.impressions)), spend: money(n(p?.spend)), screens: n(p?.screens), proofs: n(q?.proofs), givt_passed: n(q?.givt_passed) }
    })
  }

  /** A partner's delivery on its screens in the window: completed plays, impressions and gross spend, per UTC day and per screen. */
  async partner (screenIds: string[], w: Window): Promise<{ plays: number, impressions: number, spend: number, days: Array<{ period: string, plays: number, impressions: number, spend: number }>, screens: Array<{ screen_id: string, plays: number, impressions: number, spend: number }> }> {
    const zero = { plays: 0, impressions: 0, spend: 0 }
    if (screenIds.length === 0) return { ...zero, days: fill([], w, 'daily', () => zero, zero), screens: [] }
    // The partner's screens are known to LMDB, not to the rollups: one list, which ClickHouse turns into a set.
    const where = `screen_id IN (SELECT arrayJoin({screens:Array(String)})) AND ${HOURS}`
    const params = { ...span(w), screens: screenIds }
    const measures = 'sumMerge(completes) AS plays, sumMerge(impressions) AS impressions, sumMerge(spend) AS spend'
    const [totals, days, screens] = await Promise.all([
      this.#analytics.query(`SELECT ${measures} FROM ${this.#db}.screen_hourly WHERE ${where}`, params),
      this.#analytics.query(`SELECT toUInt32(toStartOfDay(hour)) AS period, ${measures} FROM ${this.#db}.screen_hourly WHERE ${where} GROUP BY period ORDER BY period`, params),
      this.#analytics.query(`SELECT screen_id, ${measures} FROM ${this.#db}.screen_hourly WHERE ${where} GROUP BY screen_id HAVING plays > 0 ORDER BY spend DESC, screen_id LIMIT 500`, params)
    ])
    const shape = (r: Row | undefined) => ({ plays: n(r?.plays), impressions: money(n(r?.impressions)), spend: money(n(r?.spend)) })
    return { ...shape(totals[0]), days: fill(days, w, 'daily', shape, zero), screens: screens.map((r) => ({ screen_id: String(r.screen_id), ...shape(r) })) }
  }
}

/** Every bucket of the window in order, zeros where ClickHouse had no row (a series a chart can plot as is). */
function fill<T> (rows: Row[], w: Window, granularity: 'hourly' | 'daily' | 'flight', shape: (r: Row) => T, zero: T): Array<T & { period: string }> {
  if (granularity === 'flight') return [{ period: iso(w.from), ...(rows[0] !== undefined ? shape(rows[0]) : zero) }]
  const step = granularity === 'hourly' ? HOUR : DAY
  const byPeriod = new Map(rows.map((r) => [n(r.period) * 1000, r]))
  const out: Array<T & { period: string }> = []
  for (let t = Math.floor(w.from / step) * step; t <= w.to; t += step) {
    const r = byPeriod.get(t)
    out.push({ period: iso(t), ...(r !== undefined ? shape(r) : zero) })
  }
  return out
}

export { DAY, HOUR }
