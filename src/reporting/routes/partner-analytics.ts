import { Reports, type Window } from '../../analytics/reports.js'
import { iso } from '../../clock.js'
import type { Deps } from '../../deps.js'
import type { PartnerAnalyticsQuery } from '../../generated/types.js'
import { route, type RouteDef } from '../../http/route.js'
import { answer, COMPUTED, windowOf } from '../answer.js'

const MAX_DAYS = 90
const DEFAULT_DAYS = 7
const cents = (usd: number) => Math.round(usd * 100)

/** A partner's delivery and earnings on its screens (spec: partner analytics row and the earnings operation), from ClickHouse. */
export function partnerAnalyticsRoutes ({ store, analytics, reports: cache, clock, config }: Deps): RouteDef[] {
  const reports = new Reports(analytics, config.clickhouseDatabase)
  const common = { tag: 'Partner', envelope: 'nested', auth: 'partner', rateGroup: 'partner', querySchema: 'PartnerAnalyticsQuery', computed: true, errors: ['invalid_date', 'service_unavailable'] } as const
  const async = `From hourly rollups. ${COMPUTED}`
  /** The partner's screens and device ids, from LMDB (the rollups know screens, not partners). */
  const screensOf = (partnerId: string): Map<string, string> => {
    const out = new Map<string, string>()
    for (const { key, value } of store.devices.getRange({ start: `${partnerId}\u0000`, end: `${partnerId}\u0001` })) out.set(value, key.slice(partnerId.length + 1))
    return out
  }
  /**
   * The partner's delivery in the query's window (checked now: a bad window is a 400 at once, computed over the
   * window at compute time), computed once for both routes and shown by each in its own shape.
   */
  type Delivery = { w: Window, screens: Map<string, string>, r: Awaited<ReturnType<Reports['partner']>> }
  const delivery = <V extends object>(partnerId: string, q: PartnerAnalyticsQuery, now: number, shape: (d: Delivery) => V) => {
    const { key } = windowOf(q, now, MAX_DAYS, DEFAULT_DAYS)
    return answer(cache, ['partner', partnerId, key].join('|'), async (): Promise<Delivery> => {
      const w = windowOf(q, clock.now(), MAX_DAYS, DEFAULT_DAYS).window
      const screens = screensOf(partnerId)
      return { w, screens, r: await reports.partner([...screens.keys()], w) }
    }, shape)
  }
  return [
    route<undefined, PartnerAnalyticsQuery>({
      ...common,
      method: 'get',
      path: '/v1/partner/analytics',
      summary: 'Delivery on the partner\'s screens: plays, impressions and gross revenue',
      description: async,
      data: 'PartnerAnalytics',
      handler: (ctx) => {
        const partnerId = ctx.principal!.partner!.id
        return delivery(partnerId, ctx.q, ctx.now, ({ w, screens, r }) => ({
          from: iso(w.from), to: iso(w.to), partner: { partner_id: partnerId, screens: screens.size, total_plays: r.plays, total_impressions: r.impressions, total_revenue_cents: cents(r.spend), total_revenue_usd: r.spend }
        }))
      }
    }),
    route<undefined, PartnerAnalyticsQuery>({
      ...common,
      method: 'get',
      path: '/v1/partner/earnings',
      summary: 'The partner\'s gross earnings per day and per screen',
      description: `Every UTC day of the window (zeros included) and the screens that played, highest revenue first (at most 500). ${async}`,
      data: 'PartnerEarnings',
      handler: (ctx) => delivery(ctx.principal!.partner!.id, ctx.q, ctx.now, ({ w, screens, r }) => ({
        from: iso(w.from),
        to: iso(w.to),
        total_revenue_cents: cents(r.spend),
        days: r.days.map((d) => ({ date: d.period.slice(0, 10), plays: d.plays, impressions: d.impressions, revenue_cents: cents(d.spend) })),
        screens: r.screens.map((s) => ({ screen_id: s.screen_id, device_id: screens.get(s.screen_id) ?? '', plays: s.plays, impressions: s.impressions, revenue_cents: cents(s.spend) }))
      }))
    })
  ]
}
