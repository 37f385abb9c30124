import { randomUUID } from 'node:crypto'
import { playingVersion } from '../../creatives/versions.js'
import { blockedCategory, blockedDomain, creativeCategories } from '../../bidding/rules.js'
import type { Deps } from '../../deps.js'
import { ApiError } from '../../errors.js'
import type { BidResponse, ExchangeBidRequest, OrtbBid, SeatBid } from '../../generated/types.js'
import { raw, route, type Ctx, type RouteDef } from '../../http/route.js'
import type { SeatRecord } from '../../accounts/records.js'
import type { CampaignRecord } from '../../campaigns/records.js'
import type { CreativeRecord } from '../../creatives/records.js'
import type { ExchangeBidRecord } from '../records.js'
import { playCostMicros } from '../../money.js'
import { AliasGuard } from '../aliases.js'
import { charge, headroom, hold, ledgerOf, release } from '../../campaigns/budget.js'
import { fit, liveCampaigns, placementOf, targets } from '../match.js'
import { displayOf, markup } from '../markup.js'

type Imp = ExchangeBidRequest['imp'][number]

/** A pending exchange bid whose notices never came is released after this long. */
export const PENDING_TTL_MS = 3_600_000
/** Settled exchange bids are kept this long for late notices, then deleted. */
export const KEEP_MS = 86_400_000

/** A bid id that sorts by when it was made (fixed-width base-36 milliseconds), so old bids are one range to delete. */
function bidIdAt (now: number): string {
  return `xb_${now.toString(36).padStart(9, '0')}${randomUUID().replace(/-/g, '')}`
}

const NO_BID = 'No bid: no campaign matches within budget, or tmax ran out.'

/** Whether a request's blocks (bcat, badv, bseat/wseat) and the alias's seat list let this campaign's seat bid. */
function allowed (req: ExchangeBidRequest, seat: SeatRecord | undefined, creative: CreativeRecord, aliasSeats: string[] | undefined): boolean {
  if (seat === undefined || seat.status !== 'approved') return false
  const id = seat.seat_id.toLowerCase()
  if (aliasSeats !== undefined && !aliasSeats.some((s) => s.toLowerCase() === id)) return false
  if (req.wseat !== undefined && req.wseat.length > 0 && !req.wseat.some((s) => s.toLowerCase() === id)) return false
  if (req.bseat?.some((s) => s.toLowerCase() === id) === true) return false
  if (blockedCategory(creativeCategories(creative), req.bcat ?? []) !== undefined) return false
  return creative.advertiser_domain === undefined || blockedDomain([creative.advertiser_domain], (req.badv ?? []).map((d) => d.toLowerCase())) === undefined
}

/** The price a campaign bids over a floor: its bid_cpm (no bid below the floor), else the floor plus a cent. */
function priceFor (c: CampaignRecord, floor: number): number | undefined {
  if (c.bid_cpm !== undefined) return c.bid_cpm >= floor ? c.bid_cpm : undefined
  return Math.round((floor + 0.01) * 100) / 100
}

/**
 * The exchange bidder endpoint (src/hot: exchanges call at their QPS within tmax) and the notices that settle its
 * bids. A request is admitted by its alias (active, the client address in its allowlist, its rate limit), its
 * signature when the alias requires one, and the OpenRTB 2.6 schema; each imp then gets the best bid among live
 * campaigns whose targeting, creative fit, blocks, budget and pacing allow it, holding the play's cost until the
 * exchange says won and billed, lost, or nothing for an hour.
 */
export function bidderRoutes (deps: Deps): RouteDef[] {
  const { store, clock, config, outbox, sealer } = deps
  const guard = new AliasGuard(store, sealer)
  const common = { tag: 'Exchange', envelope: 'flat', auth: 'none', rateGroup: 'exchange' } as const
  const aliasOf = (ctx: Ctx<any, any>) => ctx.params.alias!
  const limit = (ctx: Ctx<any, any>) => {
    const c = guard.find(aliasOf(ctx))
    return c !== undefined ? { subject: `alias:${aliasOf(ctx)}`, limit: c.record.rate_limit_per_minute } : undefined
  }
  // A bid is kept by the node that made it: on a cluster its notices name that node, and the load balancer routes
  // them there (deploy/haproxy.cfg).
  const node = store.share.node !== undefined ? `&node=${store.share.node}` : ''
  const noticeUrl = (alias: string, kind: 'win' | 'loss' | 'bill', bidId: string, macros: string) => `${config.baseUrl}/openrtb/bidder/${alias}/notices/${kind}?bid=${bidId}${node}${macros}`

  const bid = route<ExchangeBidRequest>({
    ...common,
    method: 'post',
    path: '/openrtb/bidder/:alias/bid',
    summary: 'OpenRTB 2.6 bid requests from an exchange: bids from active campaigns, or 204 no-bid',
    rateLimit: limit,
    admit: (ctx) => { guard.admit(aliasOf(ctx), ctx.ip) },
    verifyRaw: (ctx, body) => { guard.verify(guard.admit(aliasOf(ctx), ctx.ip), ctx.headers['x-exchange-signature'], body, clock.now()) },
    body: 'ExchangeBidRequest',
    invalidBody: { code: 'invalid_bid_request', extras: { nbr: 2 } },
    produces: 'application/json',
    rawSchema: 'BidResponse',
    noContent: NO_BID,
    errors: ['alias_not_found', 'ip_not_allowed', 'invalid_signature', 'invalid_bid_request'],
    handler: (ctx) => {
      const alias = guard.admit(aliasOf(ctx), ctx.ip).record
      const req = ctx.body
      const tmax = req.tmax ?? alias.default_tmax_ms
      const headers = { 'X-OpenRTB-Version': '2.6' }
      const noBid = () => raw('', 'application/json', 204, headers)
      if (clock.now() - ctx.now >= tmax) return noBid()
      if (req.cur !== undefined && req.cur.length > 0 && !req.cur.includes('USD')) return noBid()
      const placement = placementOf(req, store)
      const now = ctx.now
      const campaigns = liveCampaigns(store, now)
      const bids: Array<{ seat: string, bid: OrtbBid }> = []
      const records: ExchangeBidRecord[] = []
      const held = new Map<string, number>()
      for (const imp of req.imp) {
        if ((imp.bidfloorcur ?? 'USD') !== 'USD' || imp.pmp?.private_auction === 1) continue
        const floor = imp.bidfloor ?? 0
        const multiplier = imp.qty?.multiplier ?? 1
        let best: { c: CampaignRecord, creative: CreativeRecord, price: number, mtype: 1 | 2, w?: number, h?: number, cost: number } | undefined
        for (const c of campaigns) {
          const named = store.creatives.get(c.creative_id)
          const creative = named !== undefined ? playingVersion(store, named) : undefined
          if (creative === undefined || creative.status !== 'approved') continue
          const price = priceFor(c, floor)
          if (price === undefined || (best !== undefined && price <= best.price)) continue
          const shape = fit(creative, imp as Imp)
          if (shape === undefined || !allowed(req, store.seats.get(c.seat_id.toLowerCase()), creative, alias.seats)) continue
          if (!targets(c.targeting, placement, store, now)) continue
          const cost = playCostMicros(price, multiplier)
          if (cost > headroom(c, ledgerOf(store, c.campaign_id, now, cost), now) - (held.get(c.campaign_id) ?? 0)) continue
          best = { c, creative, price, cost, ...shape }
        }
        if (best === undefined) continue
        const bidId = bidIdAt(now)
        const o: OrtbBid = {
          id: bidId,
          impid: imp.id,
          price: best.price,
          adm: markup(best.creative, best.mtype, `${config.baseUrl}/assets/${best.creative.creative_id}`, bidId, noticeUrl(alias.alias, 'bill', bidId, ''), displayOf(imp)),
          adomain: best.creative.advertiser_domain !== undefined ? [best.creative.advertiser_domain] : [],
          crid: best.creative.creative_id,
          cid: best.c.campaign_id,
          mtype: best.mtype
        }
        const cats = creativeCategories(best.creative)
        if (cats.length > 0) o.cat = cats
        if (best.w !== undefined) o.w = best.w
        if (best.h !== undefined) o.h = best.h
        if (alias.notices.win) o.nurl = noticeUrl(alias.alias, 'win', bidId, '&price=${AUCTION_PRICE}&mult=${AUCTION_MULTIPLIER}')
        if (alias.notices.loss) o.lurl = noticeUrl(alias.alias, 'loss', bidId, '&code=${AUCTION_LOSS}&min=${AUCTION_MIN_TO_WIN}')
        if (alias.notices.billing) o.burl = noticeUrl(alias.alias, 'bill', bidId, '&price=${AUCTION_PRICE}&mult=${AUCTION_MULTIPLIER}&ts=${AUCTION_IMP_TS}')
        bids.push({ seat: best.c.seat_id, bid: o })
        const test = req.test === 1
        records.push({ bid_id: bidId, alias: alias.alias, request_id: req.id, imp_id: imp.id, campaign_id: best.c.campaign_id, seat_id: best.c.seat_id, creative_id: best.creative.creative_id, price: best.price, multiplier, reserved_micros: test ? 0 : best.cost, at: now, status: 'pending', test })
        if (!test) held.set(best.c.campaign_id, (held.get(best.c.campaign_id) ?? 0) + best.cost)
      }
      if (bids.length === 0 || clock.now() - ctx.now >= tmax) return noBid()
      for (const r of records) {
        store.exchangeBids.putSync(r.bid_id, r)
        store.exchangePending.putSync([r.at, r.bid_id], 1)
        if (r.reserved_micros > 0) hold(store, r.campaign_id, r.reserved_micros)
      }
      const seatbid = new Map<string, SeatBid>()
      for (const b of bids) {
        const group = seatbid.get(b.seat)
        if (group === undefined) seatbid.set(b.seat, { seat: b.seat, bid: [b.bid] })
        else group.bid.push(b.bid)
      }
      const response: BidResponse = { id: req.id, bidid: `xr_${randomUUID()}`, cur: 'USD', seatbid: [...seatbid.values()] }
      return raw(JSON.stringify(response), 'application/json', 200, headers)
    }
  })

  /** Settles one exchange bid from a notice; GET because exchanges fire notices as GETs, so it opens its own transaction. */
  const notice = (kind: 'win' | 'loss' | 'bill'): RouteDef => route({
    ...common,
    method: 'get',
    path: `/openrtb/bidder/:alias/notices/${kind}`,
    summary: { win: 'Win notice (nurl) from an exchange', loss: 'Loss notice (lurl) from an exchange', bill: 'Billing notice (burl, or the VAST Impression) from an exchange' }[kind],
    description: {
      win: 'The exchange says the bid won at ${AUCTION_PRICE} (clamped to the bid price) for ${AUCTION_MULTIPLIER} impressions (at most the offered multiplier). Without billing notices on the alias the play is charged now; otherwise at the billing notice. Repeats change nothing.',
      loss: 'The exchange says the bid lost (${AUCTION_LOSS}); the budget it held is released.',
      bill: 'The play happened: its cost (clearing CPM / 1000 x multiplier, micro-USD precision) is charged to the campaign once, with ${AUCTION_IMP_TS} as the play time when given.'
    }[kind],
    rateLimit: limit,
    admit: (ctx) => { guard.admit(aliasOf(ctx), ctx.ip) },
    query: [
      { name: 'bid', description: 'The bid id (xb_...) the notice URL carries.', schema: { type: 'string' }, required: true },
      { name: 'node', description: 'On a cluster, the node that made the bid and keeps it: the load balancer routes the notice there.', schema: { type: 'string' } },
      ...(kind === 'loss'
        ? [{ name: 'code', description: 'OpenRTB loss reason code (${AUCTION_LOSS}).', schema: { type: 'string' } }, { name: 'min', description: '${AUCTION_MIN_TO_WIN}.', schema: { type: 'string' } }]
        : [{ name: 'price', description: 'Clearing CPM (${AUCTION_PRICE}).', schema: { type: 'string' } }, { name: 'mult', description: '${AUCTION_MULTIPLIER}.', schema: { type: 'string' } }])
    ],
    produces: 'application/json',
    status: 204,
    errors: ['alias_not_found', 'ip_not_allowed', 'not_found'],
    handler: (ctx) => {
      const alias = aliasOf(ctx)
      const id = ctx.query.get('bid') ?? ''
      const record = store.exchangeBids.get(id)
      if (record === undefined || record.alias !== alias) throw new ApiError('not_found', `No bid ${id} was made to ${alias}.`, { param: 'bid' })
      const now = ctx.now
      const number = (name: string) => {
        const v = Number(ctx.query.get(name) ?? '')
        return ctx.query.get(name) !== null && ctx.query.get(name) !== '' && Number.isFinite(v) && v >= 0 ? v : undefined
      }
      store.write(() => {
        const r = store.exchangeBids.get(id)!
        if (r.status === 'billed' || r.status === 'lost' || r.status === 'expired') return
        const next: ExchangeBidRecord = { ...r, settled_at: now }
        const billing = (): void => {
          const clearing = next.clearing ?? r.price
          const cost = r.test ? 0 : playCostMicros(clearing, next.multiplier)
          if (!r.test) charge(store, outbox, r.campaign_id, r.reserved_micros, cost, Math.max(1, Math.round(next.multiplier)), now)
          next.status = 'billed'
          next.reserved_micros = 0
        }
        if (kind === 'loss') {
          if (r.status !== 'pending') return
          if (r.reserved_micros > 0) release(store, r.campaign_id, r.reserved_micros)
          next.status = 'lost'
          next.reserved_micros = 0
          const code = number('code')
          if (code !== undefined) next.loss_code = code
        } else {
          const price = number('price')
          if (price !== undefined) next.clearing = Math.min(price, r.price)
          const mult = number('mult')
          if (mult !== undefined && mult > 0) next.multiplier = Math.min(mult, r.multiplier)
          if (kind === 'bill') billing()
          else if (r.status === 'pending') {
            next.status = 'won'
            if (!(store.aliases.get(alias)?.notices.billing ?? true)) billing()
          } else return
        }
        store.exchangeBids.putSync(id, next)
        // A won bid still holds its budget until the play is billed (or the hold expires): it stays pending until then.
        if (next.status === 'billed' || next.status === 'lost') store.exchangePending.removeSync([r.at, r.bid_id])
      })
      return raw('', 'application/json', 204)
    }
  })

  return [bid, notice('win'), notice('loss'), notice('bill')]
}

/**
 * Releases the budget of exchange bids that no loss or billing notice settled within PENDING_TTL_MS (a win that never
 * played is not charged), and deletes bids older than KEEP_MS (a clock-driven job).
 */
export function expireExchangeBids (store: Deps['store'], now: number, batch = 5000): number {
  const due = [...store.exchangePending.getKeys({ end: [now - PENDING_TTL_MS, '\uffff'], limit: batch } as never)] as unknown as Array<[number, string]>
  const old = [...store.exchangeBids.getKeys({ start: 'xb_', end: `xb_${Math.max(0, now - KEEP_MS).toString(36).padStart(9, '0')}`, limit: batch })]
  if (due.length === 0 && old.length === 0) return 0
  store.write(() => {
    for (const id of old) store.exchangeBids.removeSync(id)
    for (const key of due) {
      store.exchangePending.removeSync(key)
      const r = store.exchangeBids.get(key[1])
      if (r === undefined || (r.status !== 'pending' && r.status !== 'won')) continue
      if (r.reserved_micros > 0) release(store, r.campaign_id, r.reserved_micros)
      store.exchangeBids.putSync(r.bid_id, { ...r, status: 'expired', reserved_micros: 0, settled_at: now })
    }
  })
  return due.length
}

