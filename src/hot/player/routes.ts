import { iso } from '../../clock.js'
import type { Deps } from '../../deps.js'
import { ApiError } from '../../errors.js'
import type { Spot, SpotEventRequest, SpotRequest } from '../../generated/types.js'
import { ok, route, type RouteDef } from '../../http/route.js'
import type { CreativeRecord } from '../../store/records.js'
import { serveAsset } from '../assets/route.js'
import { screenOfToken, spotEvent, takeSpot } from './feed.js'

/** How long before a spot ends its player should ask for the next one. */
const LEAD_SECONDS = 3

/**
 * The screen player's feed (src/hot: players ask at every slot): the next spot from the waterfall, the events that
 * bill and count it, and the moderated assets. Addressed by the screen's embed token, the capability its embed_url
 * carries.
 */
export function playerRoutes (deps: Deps): RouteDef[] {
  const { store, config, objects } = deps
  const common = { tag: 'Player', envelope: 'flat', auth: 'none', rateGroup: 'player' } as const
  const base = (token: string) => `${config.baseUrl}/embed/${token}`

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
        const screen = screenOfToken(store, token)
        const now = ctx.now
        const taken = takeSpot(deps, screen, now)
        if (taken.closed) {
          const wait = taken.waitSeconds
          const spot: Spot = { spot_id: null, screen_id: screen.screen_id, tier: 'closed', starts_at: iso(now), ends_at: iso(now + wait * 1000), duration_seconds: wait, creative: null, next_request_at: iso(now + wait * 1000) }
          return ok(spot)
        }
        const { record } = taken
        const spotId = record.spot_id
        const duration = record.duration_seconds
        const spot: Spot = {
          spot_id: spotId,
          screen_id: screen.screen_id,
          tier: record.tier,
          starts_at: iso(now),
          ends_at: iso(now + duration * 1000),
          duration_seconds: duration,
          creative: taken.creative !== undefined ? creativeView(token, taken.creative) : null,
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
        const screen = screenOfToken(store, ctx.params.token!)
        const spot = store.spots.get(ctx.params.spot_id!)
        if (spot === undefined || spot.screen_id !== screen.screen_id) throw new ApiError('spot_not_found', `No spot ${ctx.params.spot_id} was given to this screen.`, { param: 'spot_id' })
        return ok(spotEvent(deps, screen, spot, { event: ctx.body.event, tier: 'signed', ...(ctx.body.at !== undefined ? { at: ctx.body.at } : {}), ...(ctx.body.duration_ms !== undefined ? { durationMs: ctx.body.duration_ms } : {}) }, ctx.now))
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
        screenOfToken(store, ctx.params.token!)
        return serveAsset(store, objects, ctx.params.creative_id!, ctx.headers['if-none-match'])
      }
    })
  ]
}
