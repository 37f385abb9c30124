import { randomUUID } from 'node:crypto'
import { iso } from '../../clock.js'
import { recordDelivery } from '../../campaigns/lifecycle.js'
import type { Deps } from '../../deps.js'
import { ApiError } from '../../errors.js'
import type { Spot, SpotEventRequest, SpotEventResult, SpotRequest } from '../../generated/types.js'
import { ok, route, type RouteDef } from '../../http/route.js'
import { serveAsset } from '../assets/route.js'
import { impressionMultiplier } from '../../inventory/fein.js'
import { localTime, minutesUntilOpen } from '../../inventory/local-time.js'
import { issueProof } from '../../proof/chain.js'
import { givtOf } from '../../proof/givt.js'
import type { CreativeRecord, ScreenRecord, SpotRecord } from '../../store/records.js'
import { addToHour } from '../bid/stats.js'
import { fromMicros, playCostMicros } from '../auction/money.js'
import { settleBilling, settleLoss, settleWin } from '../auction/settle.js'
import { decide } from '../auction/waterfall.js'

/** How long before a spot ends its player should ask for the next one. */
const LEAD_SECONDS = 3
/** How long a closed screen waits before asking again, at most. */
const CLOSED_RETRY_SECONDS = 300
/** Clock skew tolerated between a player and the service. */
const SKEW_MS = 60_000

/**
 * The screen player's feed (src/hot: players ask at every slot): the next spot from the waterfall, the events that
 * bill and count it, and the moderated assets. Addressed by the screen's embed token, the capability its embed_url
 * carries.
 */
export function playerRoutes (deps: Deps): RouteDef[] {
  const { store, config, notices, funnel, objects, outbox, proofSigner } = deps
  const common = { tag: 'Player', envelope: 'flat', auth: 'none', rateGroup: 'player' } as const
  const base = (token: string) => `${config.baseUrl}/embed/${token}`

  const screenOf = (token: string): ScreenRecord => {
    const id = store.embeds.get(token)
    const screen = id !== undefined ? store.screens.get(id) : undefined
    if (screen === undefined) throw new ApiError('screen_not_found', 'No screen has this embed token; use the embed_url its device registration returned.', { param: 'token' })
    return screen
  }

  const creativeView = (token: string, c: CreativeRecord): NonNullable<Spot['creative']> => {
    const view: NonNullable<Spot['creative']> = { creative_id: c.creative_id, content_type: c.asset?.media_type ?? c.content_type, url: `${base(token)}/assets/${c.creative_id}` }
    if (c.asset?.width !== undefined) view.width = c.asset.width
    if (c.asset?.height !== undefined) view.height = c.asset.height
    if (c.asset?.duration_seconds !== undefined) view.duration_seconds = c.asset.duration_seconds
    if (c.click_url !== undefined) view.click_url = c.click_url
    return view
  }

  return [
    route<SpotRequest>({
      ...common,
      method: 'post',
      path: '/embed/:token/spots',
      summary: 'The next spot for a screen: runs the waterfall',
      description: 'Guaranteed lines behind pace, then Preferred deals (fixed price), PMP deals (first price), the open auction (second price plus 0.01 among stored production bids, one per seat), guaranteed lines ahead of pace, then the house creative. Every stored bid on the screen is settled by the decision: the winner\'s nurl fires with the clearing price, losers get their lurl with ${AUCTION_LOSS} (100/101 below floor, 102 outbid with ${AUCTION_MIN_TO_WIN}, 103 lost to a deal or placement, 104 seat blocked, 200-209 creative filtered, 2 expired). Outside operating hours the tier is closed and nothing is settled. ?dry_run=true shows the decision without settling anything.',
      body: 'SpotRequest',
      data: 'Spot',
      errors: ['screen_not_found'],
      handler: (ctx) => {
        const token = ctx.params.token!
        const screen = screenOf(token)
        const now = ctx.now
        const house = store.meta.get('settings:house_creative_id') as string | undefined
        const decision = decide(store, screen, now, house)
        if (decision.tier === 'closed') {
          const wait = Math.min(CLOSED_RETRY_SECONDS, (minutesUntilOpen(screen.operating_hours, localTime(screen.timezone, now)) ?? 60) * 60)
          const spot: Spot = { spot_id: null, screen_id: screen.screen_id, tier: 'closed', starts_at: iso(now), ends_at: iso(now + wait * 1000), duration_seconds: wait, creative: null, next_request_at: iso(now + wait * 1000) }
          return ok(spot)
        }
        const spotId = `spt_${randomUUID()}`
        const duration = screen.slot_duration_seconds
        const record: SpotRecord = { spot_id: spotId, screen_id: screen.screen_id, tier: decision.tier, decided_at: now, starts_at: now, duration_seconds: duration, status: 'served' }
        if (decision.creative !== undefined) record.creative_id = decision.creative.creative_id
        const settle = { store, notices }
        for (const loss of decision.losses) settleLoss(settle, screen, loss, decision.tier, now)
        if (decision.winner !== undefined) {
          const { bid, clearing } = decision.winner
          settleWin(settle, screen, decision.winner, decision.tier, spotId, now)
          record.bid = { ...bid, clearing }
          record.seat_id = bid.seat_id
          if (bid.dealid !== undefined) record.deal_id = bid.dealid
          if (bid.adm !== undefined) record.adm = bid.adm
        }
        if (decision.assignment !== undefined) {
          record.assignment_id = decision.assignment.assignment_id
          record.seat_id = decision.assignment.seat_id
          if (decision.assignment.campaign_id !== undefined) record.campaign_id = decision.assignment.campaign_id
        }
        if (decision.line !== undefined) {
          const key: [string, string, string] = [screen.screen_id, decision.local.date, decision.line]
          store.plays.putSync(key, (store.plays.get(key) ?? 0) + 1)
        }
        store.spots.putSync(spotId, record)
        funnel.append({
          stage: 'auction', at: now, screens: [screen.screen_id], spot_id: spotId, tier: decision.tier, competitors: decision.losses.length + (decision.winner !== undefined ? 1 : 0),
          ...(record.seat_id !== undefined ? { seat_id: record.seat_id } : {}),
          ...(record.creative_id !== undefined ? { creative_id: record.creative_id } : {}),
          ...(record.bid !== undefined ? { clearing_cpm: record.bid.clearing, multiplier: record.bid.multiplier } : {})
        })
        const spot: Spot = {
          spot_id: spotId,
          screen_id: screen.screen_id,
          tier: decision.tier,
          starts_at: iso(now),
          ends_at: iso(now + duration * 1000),
          duration_seconds: duration,
          creative: decision.creative !== undefined ? creativeView(token, decision.creative) : null,
          events_url: `${base(token)}/spots/${spotId}/events`,
          next_request_at: iso(now + Math.max(1, duration - LEAD_SECONDS) * 1000)
        }
        if (record.adm !== undefined) spot.adm = record.adm
        return ok(spot, 201)
      }
    }),
    route<SpotEventRequest>({
      ...common,
      method: 'post',
      path: '/embed/:token/spots/:spot_id/events',
      summary: 'Report render_started or play_completed for a spot',
      description: 'Funnel events render_started and play_completed. play_completed bills a bid spot once: spend = clearing CPM / 1000 x the multiplier confirmed at render (micro-USD precision), the buyer\'s burl fires, the seat\'s stats add the spend, a campaign placement counts its delivery, and a played creative gets a signed proof of play (proof_id; GET /v1/advertiser/proof/proofs/{id}). Repeats answer duplicate: true and change nothing.',
      body: 'SpotEventRequest',
      data: 'SpotEventResult',
      errors: ['screen_not_found', 'spot_not_found'],
      handler: (ctx) => {
        const screen = screenOf(ctx.params.token!)
        const spot = store.spots.get(ctx.params.spot_id!)
        if (spot === undefined || spot.screen_id !== screen.screen_id) throw new ApiError('spot_not_found', `No spot ${ctx.params.spot_id} was given to this screen.`, { param: 'spot_id' })
        const now = ctx.now
        const at = ctx.body.at ?? now
        if (at < spot.decided_at - SKEW_MS || at > now + SKEW_MS) throw new ApiError('invalid_parameter', 'at must lie between the spot\'s decision and now (epoch ms).', { param: 'at' })
        const event = ctx.body.event
        const result: SpotEventResult = { spot_id: spot.spot_id, event, status: spot.status, duplicate: false }
        const next: SpotRecord = { ...spot }
        if (event === 'render_started') {
          if (spot.started_at !== undefined) return ok({ ...result, duplicate: true })
          next.started_at = at
          if (spot.status === 'served') next.status = 'started'
          if (spot.bid !== undefined) next.multiplier = Math.min(spot.bid.multiplier, impressionMultiplier(store.fein.get(screen.screen_id), screen.capabilities.fein, now))
          funnel.append({ stage: 'render_started', at, screens: [screen.screen_id], spot_id: spot.spot_id, tier: spot.tier, ...(spot.seat_id !== undefined ? { seat_id: spot.seat_id } : {}), ...(spot.creative_id !== undefined ? { creative_id: spot.creative_id } : {}) })
        } else {
          if (spot.status === 'completed') return ok({ ...result, duplicate: true })
          next.status = 'completed'
          next.completed_at = at
          next.started_at ??= at - (ctx.body.duration_ms ?? spot.duration_seconds * 1000)
          const multiplier = next.multiplier ?? spot.bid?.multiplier ?? 1
          next.multiplier = multiplier
          if (spot.bid !== undefined) {
            const cost = playCostMicros(spot.bid.clearing, multiplier)
            next.cost_micros = cost
            addToHour(store, spot.bid.seat_id, now, (h) => { h.spend_usd = fromMicros(Math.round(h.spend_usd * 1e6) + cost) })
            settleBilling({ store, notices }, spot.bid, multiplier, at, now)
            result.billed = true
          }
          if (spot.campaign_id !== undefined) recordDelivery(store, outbox, spot.campaign_id, Math.max(1, Math.round(multiplier)), 0, now)
          if (spot.creative_id !== undefined) {
            const durationMs = Math.round(ctx.body.duration_ms ?? at - next.started_at)
            const proof = issueProof(store, proofSigner, outbox, { timestamp: at, adId: spot.creative_id, impressionId: spot.spot_id, screenId: screen.screen_id, deviceId: screen.device_id }, {
              verification_tier: 'signed',
              seat_id: spot.seat_id ?? null,
              creative_id: spot.creative_id,
              spot_id: spot.spot_id,
              duration_ms: durationMs,
              completed: true,
              givt: givtOf(store, screen, { timestamp: at, durationMs, completed: true, slotSeconds: spot.duration_seconds })
            }, now)
            result.proof_id = proof.proof_id
          }
          funnel.append({
            stage: 'play_completed', at, screens: [screen.screen_id], spot_id: spot.spot_id, tier: spot.tier, multiplier,
            ...(ctx.body.duration_ms !== undefined ? { duration_ms: ctx.body.duration_ms } : {}),
            ...(spot.seat_id !== undefined ? { seat_id: spot.seat_id } : {}),
            ...(spot.creative_id !== undefined ? { creative_id: spot.creative_id } : {}),
            ...(spot.bid !== undefined ? { clearing_cpm: spot.bid.clearing, cost_usd: fromMicros(next.cost_micros!) } : {})
          })
        }
        store.spots.putSync(spot.spot_id, next)
        result.status = next.status
        return ok(result)
      }
    }),
    route({
      ...common,
      method: 'get',
      path: '/embed/:token/assets/:creative_id',
      summary: 'A moderated creative asset, for the screen\'s player',
      description: 'The bytes of an approved creative (ETag is its SHA-256; cacheable for a day). Only approved creatives are served.',
      produces: 'application/octet-stream',
      cacheSeconds: 86_400,
      errors: ['screen_not_found', 'creative_not_found'],
      handler: (ctx) => {
        screenOf(ctx.params.token!)
        return serveAsset(store, objects, ctx.params.creative_id!, ctx.headers['if-none-match'])
      }
    })
  ]
}
