import { Reports, type Window } from '../../analytics/reports.js'
import type { Deps } from '../../deps.js'
import type { FunnelQuery, ReportQuery, ScreensReportQuery, TimeseriesQuery } from '../../generated/types.js'
import { route, type Ctx, type RouteDef } from '../../http/route.js'
import { answer, COMPUTED, windowOf, type WindowQuery } from '../answer.js'

/** Seat reports reach back at most this many days (spec, Limits). */
const MAX_DAYS = 90
const DEFAULT_DAYS = 7
const ASYNC = `From hourly rollups. ${COMPUTED} Windows: days (1-90, default 7, ending now) or start_date..end_date (UTC days, at most 90 days back).`

/** The seat's funnel and delivery reports (spec, GET /analytics/funnel and reports), scoped to the calling seat. */
export function reportRoutes ({ store, analytics, reports: cache, clock, config }: Deps): RouteDef[] {
  const reports = new Reports(analytics, config.clickhouseDatabase)
  const common = { tag: 'Reporting', envelope: 'flat', auth: 'seat', scope: 'reports:read', rateGroup: 'reporting', errors: ['invalid_date', 'service_unavailable'] } as const
  const named = <T extends { screens: Array<{ screen_id: string }> }>(report: T): T => ({ ...report, screens: report.screens.map((s) => ({ ...s, name: store.screens.get(s.screen_id)?.name ?? null })) })
  /** The seat's answer for a query: keyed by the window as asked (days, or dates), computed over the window then. */
  const seatAnswer = <T extends object>(ctx: Ctx<undefined, WindowQuery>, kind: string, parts: unknown[], compute: (seat: string, w: Window) => Promise<T>) => {
    const seat = ctx.principal!.seat!.seat_id
    const { key } = windowOf(ctx.q, ctx.now, MAX_DAYS, DEFAULT_DAYS)
    return answer(cache, [kind, seat, key, ...parts].join('|'), () => compute(seat, windowOf(ctx.q, clock.now(), MAX_DAYS, DEFAULT_DAYS).window))
  }
  return [
    route<undefined, FunnelQuery>({
      ...common,
      method: 'get',
      path: '/openrtb/v2/analytics/funnel',
      summary: 'The delivery funnel: request, bid_received, render_started, play_completed, with rates, the top 50 screens and a series',
      description: `bid_rate = bid_received / request, fill_rate = render_started / bid_received, start_to_complete_rate = play_completed / render_started. granularity: hourly, daily (default) or flight (one bucket for the window). ${ASYNC}`,
      querySchema: 'FunnelQuery',
      data: 'FunnelReport',
      computed: true,
      handler: (ctx) => {
        const granularity = ctx.q.granularity ?? 'daily'
        return seatAnswer(ctx, 'funnel', [granularity, ctx.q.screen_id], async (seat, w) => named(await reports.funnel(seat, w, granularity, ctx.q.screen_id)))
      }
    }),
    route<undefined, ReportQuery>({
      ...common,
      method: 'get',
      path: '/openrtb/v2/reports/summary',
      summary: 'Delivery totals: impressions, plays, unique screens, spend, CPM, fill and win rates',
      description: ASYNC,
      querySchema: 'ReportQuery',
      data: 'ReportSummary',
      computed: true,
      handler: (ctx) => seatAnswer(ctx, 'summary', [], (seat, w) => reports.summary(seat, w))
    }),
    route<undefined, ScreensReportQuery>({
      ...common,
      method: 'get',
      path: '/openrtb/v2/reports/screens',
      summary: 'Delivery per screen: impressions, plays, CPM, fills, spend, hours active',
      description: `sort: impressions (default), plays, spend, bids or requests, descending; limit 1-500 (default 50). ${ASYNC}`,
      querySchema: 'ScreensReportQuery',
      data: 'ScreensReport',
      computed: true,
      handler: (ctx) => {
        const sort = ctx.q.sort ?? 'impressions'
        const limit = ctx.q.limit ?? 50
        return seatAnswer(ctx, 'screens', [sort, limit], async (seat, w) => named(await reports.screens(seat, w, sort, limit)))
      }
    }),
    route<undefined, TimeseriesQuery>({
      ...common,
      method: 'get',
      path: '/openrtb/v2/reports/timeseries',
      summary: 'Delivery per UTC hour or day, every bucket of the window included',
      description: `granularity: hourly or daily (default). ${ASYNC}`,
      querySchema: 'TimeseriesQuery',
      data: 'TimeseriesReport',
      computed: true,
      handler: (ctx) => {
        const granularity = ctx.q.granularity ?? 'daily'
        return seatAnswer(ctx, 'timeseries', [granularity, ctx.q.screen_id], (seat, w) => reports.timeseries(seat, w, granularity, ctx.q.screen_id))
      }
    })
  ]
}
