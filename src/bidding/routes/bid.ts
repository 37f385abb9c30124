import { Reports } from '../../analytics/reports.js'
import { presentedKey } from '../../auth/keys.js'
import { activeDealsFor } from '../../campaigns/deals.js'
import { iso } from '../../clock.js'
import type { Deps } from '../../deps.js'
import type { BidResponse, BidResult, OrtbBid } from '../../generated/types.js'
import { ok, route, type RouteDef } from '../../http/route.js'
import type { StoredBid } from '../records.js'
import type { NoticeBid } from '../auction/settle.js'
import type { BidIntake } from '../intake.js'
import { scoreBid, type Scored } from '../score.js'
import { lastDay } from '../hour-stats.js'

/** OpenRTB 2.6 no-bid reason given with invalid_bid_response: the response could not be read. */
const NBR_INVALID = 2

/**
 * POST /openrtb/v2/bid (spec, POST /bid): an OpenRTB 2.6 bid response answering bid requests from GET /adslots. Each
 * bid is scored inline (src/bidding/score.ts): a worker hop would cost more than the scoring and could not answer a
 * pipelined request. What the response changes (src/bidding/intake.ts) is made durable in the hot thread's journal
 * before the answer and applied to LMDB with the thread's turn; on a cluster node the answer also waits for the
 * engine to hold the stored bids (the book, src/cluster/shipper.ts). Sandbox seats are scored only.
 */
export function bidRoute ({ store, impIds, sealer, journal, config }: Deps): RouteDef {
  return route<BidResponse>({
    method: 'post',
    path: '/openrtb/v2/bid',
    summary: 'Submit an OpenRTB 2.6 bid response',
    tag: 'Bidding',
    envelope: 'flat',
    auth: 'seat',
    scope: 'bid:write',
    rateGroup: 'bidding',
    body: 'BidResponse',
    data: 'BidResult',
    invalidBody: { code: 'invalid_bid_response', extras: { nbr: NBR_INVALID } },
    errors: ['invalid_bid_response'],
    // Scoring reads only (imp id signatures, screens, creatives, deals): it runs before the write lock is taken.
    prepare: (ctx) => {
      const seat = ctx.principal!.seat!
      const deals = activeDealsFor(store, seat.seat_id)
      const cur = ctx.body.cur ?? 'USD'
      return (ctx.body.seatbid ?? []).flatMap((seatbid) => seatbid.bid.map((bid) => ({ bid, scored: scoreBid(bid, { store, impIds, seatId: seat.seat_id, deals, cur, now: ctx.now, allowPrivateAssetUrls: config.allowPrivateAssetUrls }) })))
    },
    // The route's writes go through the thread's journal: outside a transaction, unless Idempotency-Key or dry_run.
    journaled: true,
    handler: (ctx) => {
      const { seat: maybeSeat, key } = ctx.principal!
      const seat = maybeSeat!
      const live = seat.status === 'approved' && !ctx.dryRun
      const result: BidResult = { id: ctx.body.id, sandbox: seat.status !== 'approved', accepted: 0, rejected: 0, results: [] }
      const intake: BidIntake = { seat_id: seat.seat_id, at: ctx.now, sandbox: result.sandbox, register: [], losses: [], stored: [], bids: [] }
      for (const { bid, scored } of ctx.prepared as Array<{ bid: OrtbBid, scored: Scored }>) {
        const { outcome, imp, creativeId, loss, register } = scored
        if (register !== undefined) intake.register.push({ creative_id: creativeId!, creative: register })
        // A production bid refused at intake lost too: it gets its lurl and legacy bid.lost like an auction loss.
        if (loss !== undefined && live && outcome.reason !== 'invalid_notice_url') {
          const lost: NoticeBid = { bid_id: bid.id, response_id: ctx.body.id, impid: bid.impid, seat_id: seat.seat_id, creative_id: creativeId ?? bid.crid ?? '', price: bid.price, key_id: key.key_id }
          if (bid.lurl !== undefined) lost.lurl = bid.lurl
          if (ctx.body.bidid !== undefined) lost.bidid = ctx.body.bidid
          if (bid.adid !== undefined) lost.adid = bid.adid
          if (bid.dealid !== undefined) lost.dealid = bid.dealid
          const refused: BidIntake['losses'][number] = { bid: lost, code: loss }
          if (imp !== undefined) refused.screen_id = imp.screenId
          // A price can only win against the floor: for a creative that may not play there is no minimum to win.
          if (outcome.reason === 'below_floor') refused.min_to_win = outcome.floor!
          intake.losses.push(refused)
        }
        if (outcome.status === 'accepted' && live && imp !== undefined && creativeId !== undefined) {
          const stored: StoredBid = {
            bid_id: bid.id, response_id: ctx.body.id, seat_id: seat.seat_id, impid: bid.impid, screen_id: imp.screenId,
            price: bid.price, floor: outcome.floor!, multiplier: imp.multiplier, creative_id: creativeId, adomain: bid.adomain ?? [],
            received_at: ctx.now, expires_at: imp.expiresAt
          }
          if (bid.dealid !== undefined) stored.dealid = bid.dealid
          stored.key_id = key.key_id
          if (ctx.body.bidid !== undefined) stored.bidid = ctx.body.bidid
          if (bid.adid !== undefined) stored.adid = bid.adid
          if (bid.nurl !== undefined) stored.nurl = bid.nurl
          if (bid.lurl !== undefined) stored.lurl = bid.lurl
          if (bid.burl !== undefined) stored.burl = bid.burl
          if (bid.adm !== undefined) stored.adm = bid.adm
          if (scored.audience !== undefined) stored.audience = scored.audience
          intake.stored.push(stored)
          outcome.stored = true
        }
        result.results.push(outcome)
        const event: BidIntake['bids'][number] = { screen_id: outcome.screen_id ?? '', price: bid.price, status: outcome.status }
        if (outcome.reason !== undefined) event.reason = outcome.reason
        if (bid.dealid !== undefined) event.deal_id = bid.dealid
        if (bid.cat !== undefined) event.cat = bid.cat
        if (bid.adomain !== undefined) event.adomain = bid.adomain
        if (imp !== undefined) event.latency_ms = ctx.now - imp.issuedAt
        intake.bids.push(event)
        if (outcome.status === 'accepted') result.accepted++
        else result.rejected++
      }
      // Legacy notifications are signed with the key that bid; a key minted before keys were sealed is sealed on its
      // first bid, from the copy it presented.
      if (live && key.sealed === undefined) {
        const presented = presentedKey(ctx.headers)
        if (presented !== undefined && presented !== '') intake.seal = { key_id: key.key_id, sealed: sealer.seal(key.key_id, presented) }
      }
      journal.record({ bid: intake })
      return ok(result)
    }
  })
}

/**
 * GET /openrtb/v2/stats (spec, GET /stats): the seat's last 24 hours of bidding from LMDB counters, real time, and
 * what ClickHouse adds from the result cache without waiting for it.
 */
export function statsRoute ({ store, analytics, reports: cache, config, clock }: Deps): RouteDef {
  const reports = new Reports(analytics, config.clickhouseDatabase)
  return route({
    method: 'get',
    path: '/openrtb/v2/stats',
    summary: '24-hour bidding performance: bids, acceptance, wins, CPM, fill, latency, win rate',
    tag: 'Bidding',
    envelope: 'flat',
    auth: 'seat',
    scope: 'stats:read',
    rateGroup: 'bidding',
    data: 'SeatStats',
    handler: (ctx) => {
      const seat = ctx.principal!.seat!.seat_id
      const counters = lastDay(store, seat, ctx.now)
      const a = cache.get(`stats|${seat}`, () => reports.delivery(seat, { from: Date.parse(counters.from), to: clock.now() }))
      const delivery = a.state === 'ready' ? { status: 'ready' as const, generated_at: iso(a.computedAt), stale: a.stale, ...a.data } : { status: a.state === 'pending' ? 'pending' as const : 'unavailable' as const }
      return ok({ ...counters, delivery })
    }
  })
}
