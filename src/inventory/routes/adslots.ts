import { randomUUID } from 'node:crypto'
import type { Deps } from '../../deps.js'
import type { AdslotsQuery } from '../../generated/types.js'
import { qualityOf, SOURCES, vasOf, type Source } from '../adslot-index.js'
import { currentVersion, touchWalk, walkTouchDue } from '../adslot-versions.js'
import type { IndexKey, IndexTuple } from '../records.js'
import { impressionMultiplier, present } from '../fein.js'
import { ok, RawJson, route, type RouteDef } from '../../http/route.js'
import { activeDealsFor } from '../../campaigns/deals.js'
import { dealPrice, dealRuns } from '../../campaigns/deal-rules.js'
import { screenDate } from '../local-time.js'
import type { DealRecord } from '../../campaigns/records.js'
import { CountCache, decodeCursor, encodeCursor, hasFeinFilter, liveOf, page, planFrom, stateOf, type Listed, type Plan, type Walk } from '../adslots/query.js'

/**
 * GET /openrtb/v2/adslots (spec, GET /adslots). One range read over the ordered index, then per row either the
 * pre-encoded screen summary (format=screens) or a bid request assembled from pre-encoded fragments, the live FEIN
 * block and a signed imp id (format=openrtb).
 */
export function adslotsRoute ({ store, inventory, impIds, config, funnel }: Deps): RouteDef {
  const counts = new CountCache()
  const ttlMs = config.adslotsCursorTtlSeconds * 1000
  const node = store.share.node

  const totalCount = (plan: Plan, now: number): number => {
    const unfiltered = Object.keys(plan.tuple).length === 0 && !hasFeinFilter(plan)
    return unfiltered ? plan.sources.reduce((n, s) => n + inventory.counts(s).total, 0) : counts.count(store, plan, now)
  }

  const summaryRow = (l: Listed, now: number): string => {
    const rows = store.rows.get(l.key[3])!
    const quality = qualityOf(l.key[1])
    // A live row shows the signals it was filtered by (min_attention, emotion), from the same read.
    const live = quality === 'live' ? `,"live":${JSON.stringify(liveOf(store, l, now))}` : ''
    return `${rows[0]},"data_quality":"${quality}","vas_7d":${JSON.stringify(vasOf(l.key[2]))}${live}}`
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

  const bidRequest = (l: Listed, seatId: string, now: number, deals: DealRecord[]): string => {
    const { key, tuple } = l as Required<Listed>
    const id = key[3]
    const rows = store.rows.get(id)!
    const sensors = tuple[5] === 1
    const state = sensors ? stateOf(store, l) : undefined
    const ranked = { quality: qualityOf(key[1]), vas: vasOf(key[2]) }
    const multiplier = impressionMultiplier(state, sensors, now)
    const impId = impIds.issue({ screenId: id, seatId, floor: tuple[10], multiplier, issuedAt: now, expiresAt: now + config.bidTtlSeconds * 1000 })
    return `{"id":"${randomUUID()}","imp":[{"id":"${impId}",${rows[1]}${pmp(deals, key, tuple, now)},"qty":{"multiplier":${multiplier},"sourcetype":2,"vendor":"oohbid-fein"},"dt":${now},"exp":${config.bidTtlSeconds}}],` +
      `${rows[2]},"at":2,"tmax":${config.tmaxMs},"cur":["USD"],"ext":{"trb":{${rows[3]},"fein":${JSON.stringify(present(state, sensors, now, ranked))}}}}`
  }

  return route<undefined, AdslotsQuery>({
    method: 'get',
    path: '/openrtb/v2/adslots',
    summary: 'Browse screens, or receive OpenRTB 2.6 bid requests for them',
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
      const cursor = q.cursor !== undefined ? decodeCursor(q.cursor, plan, store, ctx.now, ttlMs, node) : undefined
      // A walk reads the order as its first page found it, whichever thread serves its next page.
      const walk: Walk = cursor ?? { version: currentVersion(store) }
      const limit = q.limit ?? 50
      const openrtb = q.format === 'openrtb'
      const { entries, hasMore } = page(store, plan, ctx.now, limit, walk, openrtb)
      const last = entries.at(-1)?.at
      const next = hasMore && last !== undefined ? encodeCursor(walk.version, ctx.now, last, node) : null
      // The keys a walk reads are kept while it is read: its last read is recorded now and then.
      const touch = cursor !== undefined && walkTouchDue(store, cursor.version, ctx.now, ttlMs)
      const wantCount = q.include_count === true || cursor === undefined
      const sources = SOURCES.filter((s) => enabled.includes(s)) as Source[]
      if (openrtb) {
        const seatId = ctx.principal!.seat!.seat_id
        const deals = activeDealsFor(store, seatId)
        const requests = entries.map((e) => bidRequest(e, seatId, ctx.now, deals)).join(',')
        if (entries.length > 0 || touch) {
          const seat = ctx.principal!.seat!
          store.write(() => {
            if (entries.length > 0) funnel.append({ stage: 'request', at: ctx.now, seat_id: seatId, sandbox: seat.status !== 'approved', screens: entries.map((e) => e.key[3]) })
            if (touch) touchWalk(store, cursor.version, ctx.now)
          })
        }
        const totals = sources.reduce((a, s) => { const c = inventory.counts(s); return { total: a.total + c.total, enriched: a.enriched + c.enriched } }, { total: 0, enriched: 0 })
        const filters = { venue_type: plan.tuple.venueType ?? null, country: plan.tuple.country ?? null, state: plan.tuple.state ?? null, city: q.city ?? null, min_vas: q.min_vas ?? null, min_attention: q.min_attention ?? null, emotion: q.emotion ?? null }
        const coverage = { total_screens: totals.total, fein_enriched: totals.enriched, after_filters: wantCount && !plan.refined ? totalCount(plan, ctx.now) : null }
        return ok(new RawJson(`{"available_slots":${entries.length},"bid_requests":[${requests}],"cur":"USD","tmax":${config.tmaxMs},"filters_applied":${JSON.stringify(filters)},"signal_coverage":${JSON.stringify(coverage)},"sources_enabled":${JSON.stringify(sources)},"cursor":${JSON.stringify({ next, has_more: hasMore })}}`))
      }
      const coverage = plan.sources.reduce((a, s) => { const c = inventory.counts(s); return { screens_with_fein: a.screens_with_fein + c.sensors, screens_without_fein: a.screens_without_fein + c.total - c.sensors } }, { screens_with_fein: 0, screens_without_fein: 0 })
      const count = plan.refined ? '' : `"total_count":${wantCount ? totalCount(plan, ctx.now) : null},`
      const body = `{"total":${entries.length},${count}"screens":[${entries.map((e) => summaryRow(e, ctx.now)).join(',')}],"sources_enabled":${JSON.stringify(sources)},"cursor":${JSON.stringify({ next, has_more: hasMore })},"fein_coverage":${JSON.stringify(coverage)}}`
      if (touch) store.write(() => touchWalk(store, cursor.version, ctx.now))
      return ok(new RawJson(body))
    }
  })
}
