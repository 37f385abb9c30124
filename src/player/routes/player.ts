import { iso } from '../../clock.js'
import type { Deps } from '../../deps.js'
import type { PlayerHeartbeat, PlayerHeartbeatRequest, Spot, SpotEventRequest, SpotRequest } from '../../generated/types.js'
import { counting, ok, raw, route, type RouteDef } from '../../http/route.js'
import type { CreativeRecord } from '../../creatives/records.js'
import type { ScreenRecord } from '../../inventory/records.js'
import { serveAsset } from './assets.js'
import { awaitSpot, deciderOf, givenSpot, screenIdOfToken, screenOfToken, spotEvent, takeSpot } from '../feed.js'
import { playerPage } from '../page.js'
import { provedAnswer, thenProved } from '../../proof/placing.js'

/** How long before a spot ends its player should ask for the next one. */
const LEAD_SECONDS = 3

/**
 * The screen player's feed (src/hot: players ask at every slot): the next spot from the waterfall, the events that
 * bill and count it, and the moderated assets. Addressed by the screen's embed token, the capability its embed_url
 * carries.
 */
export function playerRoutes (deps: Deps): RouteDef[] {
  const { store, config, objects, inventory } = deps
  const common = { tag: 'Player', envelope: 'flat', auth: 'none', rateGroup: 'player' } as const
  const base = (token: string) => `${config.baseUrl}/embed/${token}`
  const page = playerPage()
  const heartbeatSeconds = Math.max(1, Math.floor(config.heartbeatTimeoutSeconds / 3))
  const heartbeatView = (screen: ScreenRecord): PlayerHeartbeat => {
    const status = inventory.statusOf(screen.screen_id)
    return { screen_id: screen.screen_id, status: status.online ? 'online' : 'offline', heartbeat_seconds: heartbeatSeconds, bound: inventory.playerOf(screen.screen_id) !== undefined }
  }

  const creativeView = (token: string, c: CreativeRecord): NonNullable<Spot['creative']> => {
    const view: NonNullable<Spot['creative']> = { creative_id: c.creative_id, content_type: c.asset?.media_type ?? c.content_type, url: `${base(token)}/assets/${c.creative_id}` }
    if (c.asset?.width !== undefined) view.width = c.asset.width
    if (c.asset?.height !== undefined) view.height = c.asset.height
    if (c.asset?.duration_seconds !== undefined) view.duration_seconds = c.asset.duration_seconds
    if (c.click_url !== undefined) view.click_url = c.click_url
    return view
  }

  /** A route by which the page says it is there (heartbeat) or going (leave), as the device its fp names. */
  const presence = (name: 'heartbeat' | 'leave', summary: string, description: string, act: (screen: ScreenRecord, now: number) => void) => route<PlayerHeartbeatRequest>({
    ...common,
    method: 'post',
    path: `/embed/:token/${name}`,
    summary,
    description,
    body: 'PlayerHeartbeatRequest',
    data: 'PlayerHeartbeat',
    errors: ['screen_not_found', 'device_mismatch'],
    handler: (ctx) => {
      const screen = screenOfToken(store, ctx.params.token!)
      inventory.bindPlayer(screen, ctx.body.fp)
      act(screen, ctx.now)
      return ok(heartbeatView(screen))
    }
  })

  return [
    route({
      ...common,
      method: 'get',
      path: '/embed/:token',
      summary: 'The screen player page (embed_url?fp=<device fingerprint>)',
      description: `Full-screen playback of the screen's feed in one small HTML page (script and style inline, no framework). It asks for a spot at every slot, plays images and video for the slot's duration, reports render_started and play_completed (billing the spot and signing its proof), heartbeats every ${heartbeatSeconds} s (a third of HEARTBEAT_TIMEOUT_SECONDS) and takes the screen offline when closed. The first fp it is opened with binds the screen to that device (another: 409 device_mismatch). When the feed cannot be reached it keeps playing the last five creatives it played (not billed) and sends the reports it owes when the feed is back. Embedding: window events service:ad_started (detail: type image, video or html, spot_id, creative_id, tier, duration_seconds, offline), service:ad_ended (spot_id, creative_id, completed, duration_ms, offline) and service:overlay_clicked (spot_id, creative_id, click_url); window.oohbid.hide() stops playback at once (a spot cut short is not counted), show() resumes, status() answers {state, online, screen_id, spot_id, creative_id, tier, plays, offline_plays, pending_reports, first_frame_ms, last_feed_at, error}.`,
      produces: 'text/html',
      cacheSeconds: 300,
      errors: ['screen_not_found'],
      handler: (ctx) => {
        screenOfToken(store, ctx.params.token!)
        return raw(page.html, 'text/html; charset=utf-8', 200, page.headers)
      }
    }),
    presence('heartbeat', 'The player page\'s heartbeat: keeps the screen online', 'Same effect as a partner heartbeat: a screen offline comes back (screen.online). Binds the screen to fp on first use (another fp: 409 device_mismatch).', (screen, now) => inventory.heartbeat(screen, now)),
    presence('leave', 'The player page closed: the screen goes offline now', 'Sent by the page as it closes (a keepalive request), so the screen goes offline (screen.offline) at once instead of after HEARTBEAT_TIMEOUT_SECONDS. The fp must be the bound one.', (screen, now) => inventory.leave(screen, now)),
    route<SpotRequest>({
      ...common,
      method: 'post',
      path: '/embed/:token/spots',
      summary: 'The next spot for a screen: runs the waterfall',
      body: 'SpotRequest',
      data: 'Spot',
      errors: ['screen_not_found', 'device_mismatch', 'spot_in_progress', 'service_unavailable'],
      screen: (ctx) => screenIdOfToken(store, ctx.params.token!),
      // takeSpot claims the screen and journals the decision's writes.
      journaled: true,
      handler: (ctx) => {
        const token = ctx.params.token!
        const screen = screenOfToken(store, token)
        inventory.bindPlayer(screen, ctx.body.fp)
        const now = ctx.now
        const taken = takeSpot(deps, screen, now)
        if (taken.closed) {
          const wait = taken.waitSeconds
          const spot: Spot = { spot_id: null, screen_id: screen.screen_id, tier: 'closed', starts_at: iso(now), ends_at: iso(now + wait * 1000), duration_seconds: wait, creative: null, next_request_at: iso(now + wait * 1000) }
          return ok(spot)
        }
        const duration = screen.slot_duration_seconds
        const slot = { screen_id: screen.screen_id, starts_at: iso(now), ends_at: iso(now + duration * 1000), duration_seconds: duration, next_request_at: iso(now + Math.max(1, duration - LEAD_SECONDS) * 1000) }
        const { record } = taken
        // A dry run's writes are rolled back: it settles nothing, so nothing is asked of the partition's log.
        const counts = ctx.dryRun ? undefined : taken.counts
        // Nothing to play: no spot was recorded, so none is created and there is nothing to report.
        if (record === undefined) return counting(ok({ spot_id: null, tier: taken.tier, creative: null, ...slot } satisfies Spot), counts)
        const spot: Spot = { spot_id: record.spot_id, tier: record.tier, creative: creativeView(token, taken.creative), events_url: `${base(token)}/spots/${record.spot_id}/events`, ...slot }
        if (record.adm !== undefined) spot.adm = record.adm
        return counting(ok(spot, 201), counts)
      }
    }),
    route<SpotEventRequest>({
      ...common,
      method: 'post',
      path: '/embed/:token/spots/:spot_id/events',
      summary: 'Report render_started or play_completed for a spot',
      body: 'SpotEventRequest',
      data: 'SpotEventResult',
      errors: ['screen_not_found', 'spot_not_found', 'spot_in_progress', 'service_unavailable'],
      screen: (ctx) => screenIdOfToken(store, ctx.params.token!),
      decidedBy: (ctx) => deciderOf(ctx.params.spot_id!),
      proves: true,
      prepare: (ctx) => awaitSpot(deps, ctx.params.spot_id!),
      handler: (ctx) => {
        const screen = screenOfToken(store, ctx.params.token!)
        const spot = givenSpot(deps, screen, ctx.params.spot_id!, ctx.prepared as boolean)
        return provedAnswer(thenProved(spotEvent(deps, screen, spot, { event: ctx.body.event, tier: 'signed', ...(ctx.body.at !== undefined ? { at: ctx.body.at } : {}), ...(ctx.body.duration_ms !== undefined ? { durationMs: ctx.body.duration_ms } : {}) }, ctx.now, ctx.dryRun), (result) => ok(result)))
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
      errors: ['screen_not_found', 'creative_not_found', 'service_unavailable'],
      handler: (ctx) => {
        screenOfToken(store, ctx.params.token!)
        return serveAsset(store, objects, ctx.params.creative_id!, ctx.headers['if-none-match'])
      }
    })
  ]
}
