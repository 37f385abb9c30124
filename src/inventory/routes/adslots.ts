import { randomUUID } from 'node:crypto'
import type { Deps } from '../../deps.js'
import type { AdslotsQuery } from '../../generated/types.js'
import { qualityOf, SOURCES, vasOf, type Source } from '../adslot-index.js'
import type { IndexKey, IndexTuple } from '../records.js'
import { impressionMultiplier, liveSignals, present } from '../fein.js'
import { ok, RawJson, route, type RouteDef } from '../../http/route.js'
import { activeDealsFor } from '../../campaigns/deals.js'
import { dealPrice, dealRuns, screenDate } from '../../bidding/rules.js'
import type { DealRecord } from '../../campaigns/records.js'
import { CountCache, decodeCursor, encodeCursor, hasFeinFilter, page, planFrom, type Plan } from '../adslots/query.js'

/**
 * GET /openrtb/v2/adslots (spec, GET /adslots). One range read over the ordered index, then per row either the
 * pre-encoded screen summary (format=screens) or a bid request assembled from pre-encoded fragments, the live FEIN
 * block and a signed imp id (format=openrtb).
 */
export function adslotsRoute ({ store, inventory, impIds, config, funnel }: Deps): RouteDef {
  const counts = new CountCache()

  const totalCount = (plan: Plan, now: number): number => {
    const unfiltered = Object.keys(plan.tuple).length === 0 && !hasFeinFilter(plan)
    return unfiltered ? plan.sources.reduce((n, s) => n + inventory.counts(s).total, 0) : counts.count(store, plan, now)
  }

  const summaryRow = (key: IndexKey, now: number): string => {
    const rows = store.rows.get(key[3])!
    const quality = qualityOf(key[1])
    // A live row shows the signals it was ordered and filtered by (min_attention, emotion), as they are now.
    const live = quality === 'live' ? `,"live":${JSON.stringify(liveSignals(store.fein.get(key[3]), now))}` : ''
    return `${rows[0]},"data_quality":"${quality}","vas_7d":${JSON.stringify(vasOf(key[2]))}${live}}`
  }

  /** The seat's deals that run on a screen now (src/bidding/rules.ts), as OpenRTB 2.6 imp.pmp. */
  const pmp = (deals: DealRecord[], key: IndexKey, tuple: IndexTuple, now: number): string => {
    if (deals.length === 0) return ''
    const screen = store.screens.get(key[3])
    const date = screen !== undefined ? screenDate(screen, now) : undefined
    const matching = date !== undefined ? deals.filter((d) => dealRuns(d, date, { key, tuple })) : []
    if (matching.length === 0) return ''
    // at: 1 first price (PMP), 3 fixed price (Preferred, Guaranteed); private_auction 0 keeps the open auction.
    return `,"pmp":${JSON.stringify({ private_auction: 0, deals: matching.map((d) => ({ id: d.deal_id, bidfloor: dealPrice(d), bidfloorcur: 'USD', at: d.type === 'PMP' ? 1 : 3, wseat: d.invited_seats, ext: { trb: { type: d.type } } })) })}`
  }

  const bidRequest = (key: IndexKey, tuple: IndexTuple, seatId: string, now: number, deals: DealRecord[]): string => {
    const id = key[3]
    const rows = store.rows.get(id)!
    const sensors = tuple[5] === 1
    const state = sensors ? store.fein.get(id) : undefined
    const multiplier = impressionMultiplier(state, sensors, now)
    const impId = impIds.issue({ screenId: id, seatId, floor: tuple[10], multiplier, issuedAt: now, expiresAt: now + config.bidTtlSeconds * 1000 })
    return `{"id":"${randomUUID()}","imp":[{"id":"${impId}",${rows[1]}${pmp(deals, key, tuple, now)},"qty":{"multiplier":${multiplier},"sourcetype":2,"vendor":"oohbid-fein"},"dt":${now},"exp":${config.bidTtlSeconds}}],` +
      `${rows[2]},"at":2,"tmax":${config.tmaxMs},"cur":["USD"],"ext":{"trb":{${rows[3]},"fein":${JSON.stringify(present(state, sensors, now))}}}}`
  }

  return route<undefined, AdslotsQuery>({
    method: 'get',
    path: '/openrtb/v2/adslots',
    summary: 'Browse screens, or receive OpenRTB 2.6 bid requests for them',
    description: 'format=screens lists screen summaries; format=openrtb returns one OpenRTB 2.6 bid request per screen, each imp id signed and valid for BID_TTL_SECONDS (imp.exp) so that POST /bid can match it. Ordered by data quality (live, historical, none), then vas_7d descending, then screen_id; pages continue with cursor.next without gaps or duplicates, owned inventory before partner inventory with source=all. Partner inventory is listed only while the operator\'s partner-display switch is on: off, source=all lists owned only and source=partner an empty page.',
    tag: 'Inventory',
    envelope: 'flat',
    auth: 'seat',
    scope: 'inventory:read',
    rateGroup: 'inventory',
    querySchema: 'AdslotsQuery',
    data: ['AdslotsScreens', 'AdslotsOpenRtb'],
    handler: (ctx) => {
      const q = ctx.q
      const enabled = inventory.sourcesEnabled()
      const plan = planFrom(q, enabled)
      const cursor = q.cursor !== undefined ? decodeCursor(q.cursor, plan, store) : undefined
      const limit = q.limit ?? 50
      const openrtb = q.format === 'openrtb'
      const { entries, hasMore } = page(store, plan, ctx.now, limit, cursor, openrtb)
      const last = entries.at(-1)?.key
      const next = hasMore && last !== undefined ? encodeCursor(last) : null
      const wantCount = q.include_count === true || cursor === undefined
      const sources = SOURCES.filter((s) => enabled.includes(s)) as Source[]
      if (openrtb) {
        const seatId = ctx.principal!.seat!.seat_id
        const deals = activeDealsFor(store, seatId)
        const requests = entries.map((e) => bidRequest(e.key, e.tuple!, seatId, ctx.now, deals)).join(',')
        if (entries.length > 0) {
          const seat = ctx.principal!.seat!
          store.write(() => funnel.append({ stage: 'request', at: ctx.now, seat_id: seatId, sandbox: seat.status !== 'approved', screens: entries.map((e) => e.key[3]) }))
        }
        const totals = sources.reduce((a, s) => { const c = inventory.counts(s); return { total: a.total + c.total, enriched: a.enriched + c.enriched } }, { total: 0, enriched: 0 })
        const filters = { venue_type: plan.tuple.venueType ?? null, country: plan.tuple.country ?? null, state: plan.tuple.state ?? null, city: q.city ?? null, min_vas: q.min_vas ?? null, min_attention: q.min_attention ?? null, emotion: q.emotion ?? null }
        const coverage = { total_screens: totals.total, fein_enriched: totals.enriched, after_filters: wantCount && !plan.refined ? totalCount(plan, ctx.now) : null }
        return ok(new RawJson(`{"available_slots":${entries.length},"bid_requests":[${requests}],"cur":"USD","tmax":${config.tmaxMs},"filters_applied":${JSON.stringify(filters)},"signal_coverage":${JSON.stringify(coverage)},"sources_enabled":${JSON.stringify(sources)},"cursor":${JSON.stringify({ next, has_more: hasMore })}}`))
      }
      const coverage = plan.sources.reduce((a, s) => { const c = inventory.counts(s); return { screens_with_fein: a.screens_with_fein + c.sensors, screens_without_fein: a.screens_without_fein + c.total - c.sensors } }, { screens_with_fein: 0, screens_without_fein: 0 })
      const count = plan.refined ? '' : `"total_count":${wantCount ? totalCount(plan, ctx.now) : null},`
      return ok(new RawJson(`{"total":${entries.length},${count}"screens":[${entries.map((e) => summaryRow(e.key, ctx.now)).join(',')}],"sources_enabled":${JSON.stringify(sources)},"cursor":${JSON.stringify({ next, has_more: hasMore })},"fein_coverage":${JSON.stringify(coverage)}}`))
    }
  })
}
