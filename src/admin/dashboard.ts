import { iso } from '../clock.js'
import type { Deps } from '../deps.js'
import type { Dashboard } from '../generated/types.js'
import { BUCKETS, merge, seriesKey, type MetricsSnapshot } from '../http/metrics.js'
import { held, ok, raw, route, type RouteDef } from '../http/route.js'
import type { Store } from '../store/store.js'
import { DASHBOARD_PAGE } from './dashboard-page.js'

/** What the dashboard reads besides the threads' metrics, all of it the supervisor's. */
export interface DashboardSources {
  now: number
  started: number
  store: Store
  moderationQueue: number
  noticesPending: number
  outboxPending: number
  funnel: { size (): number, lagSeconds (now: number): number }
  connected: boolean
}

const TIERS = ['guaranteed', 'preferred', 'pmp', 'open_auction', 'house', 'closed'] as const

/** The dashboard's numbers from every thread's metrics snapshot and the supervisor's backlogs. */
export function dashboardOf (snapshots: MetricsSnapshot[], s: DashboardSources): Dashboard {
  const { series, counters } = merge(snapshots)
  const counter = (name: string, labels: string) => counters.get(name)?.values.get(labels) ?? 0
  const spots = Object.fromEntries(TIERS.map((tier) => [tier, counter('oohbid_spots_total', `tier="${tier}"`)])) as Dashboard['spots']
  const bids = series.get(seriesKey('POST', '/openrtb/v2/bid'))
  const screens = new Map<string, number>()
  for (const snap of snapshots) for (const [id, n] of snap.screens) screens.set(id, (screens.get(id) ?? 0) + n)
  return {
    at: iso(s.now),
    uptime_seconds: Math.max(0, Math.round((s.now - s.started) / 1000)),
    spots,
    bids: {
      accepted: counter('oohbid_bids_total', 'status="accepted"'),
      rejected: counter('oohbid_bids_total', 'status="rejected"'),
      won: counter('oohbid_spots_won_by_bids_total', '')
    },
    bid_latency: { bounds_seconds: BUCKETS, counts: bids?.buckets ?? BUCKETS.map(() => 0), count: bids?.count ?? 0 },
    top_screens: [...screens].sort((a, b) => b[1] - a[1]).slice(0, 10).map(([id, n]) => ({ screen_id: id, name: s.store.screens.get(id)?.name ?? id, spots: n })),
    moderation_queue: s.moderationQueue,
    notices_pending: s.noticesPending,
    outbox_pending: s.outboxPending,
    clickhouse: { connected: s.connected, pending_events: s.funnel.size(), lag_seconds: s.funnel.lagSeconds(s.now) }
  }
}

/**
 * The operator dashboard: a page (no data in it, so no token needed to load it) that asks GET /admin/v1/dashboard
 * with the operator token every 2 s and draws the answers as small charts.
 */
export function dashboardRoutes ({ dashboard }: Deps): RouteDef[] {
  return [
    route({
      tag: 'Operator',
      envelope: 'flat',
      auth: 'none',
      rateGroup: 'public',
      method: 'get',
      path: '/admin/dashboard',
      summary: 'The operator dashboard page',
      produces: 'text/html',
      handler: () => raw(DASHBOARD_PAGE, 'text/html; charset=utf-8')
    }),
    route({
      tag: 'Operator',
      envelope: 'flat',
      auth: 'admin',
      rateGroup: 'ops',
      method: 'get',
      path: '/admin/v1/dashboard',
      summary: 'The operator dashboard\'s numbers, now',
      data: 'Dashboard',
      gathered: true,
      handler: () => held(dashboard().then((data) => ok(data)))
    })
  ]
}
