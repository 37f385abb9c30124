import type { Deps } from '../../deps.js'
import { ApiError } from '../../errors.js'
import { counting, raw, route, type RouteDef } from '../../http/route.js'
import { provedAnswer, thenProved } from '../../proof/placing.js'
import { vastEmpty, vastInline } from '../vast.js'
import { awaitSpot, deciderOf, givenSpot, screenIdOfToken, screenOfToken, spotEvent, takeSpot } from '../feed.js'

const XML = 'application/xml; charset=utf-8'
const EVENTS = new Set(['impression', 'start', 'firstQuartile', 'midpoint', 'thirdQuartile', 'complete', 'error'])

/**
 * The feed for players that speak VAST (spec: VAST-tag operation, path not shown): GET {embed_url}/vast runs the
 * same waterfall as the JSON feed and answers a VAST 4.2 InLine ad whose tracking URLs report the play: start
 * (and the impression) is render_started, complete is play_completed, which bills the spot and signs its proof at
 * tier event_confirmed.
 */
export function vastRoutes (deps: Deps): RouteDef[] {
  const { store, config } = deps
  const common = { tag: 'Player', envelope: 'flat', auth: 'none', rateGroup: 'player' } as const
  const base = (token: string) => `${config.baseUrl}/embed/${token}`
  return [
    route({
      ...common,
      method: 'get',
      path: '/embed/:token/vast',
      summary: 'The next spot as a VAST 4.2 tag, for players that speak VAST',
      produces: 'application/xml',
      errors: ['screen_not_found', 'spot_in_progress', 'service_unavailable'],
      screen: (ctx) => screenIdOfToken(store, ctx.params.token!),
      // takeSpot claims the screen and journals the decision's writes: the answer waits for them, as a JSON spot's.
      journaled: true,
      handler: (ctx) => {
        const token = ctx.params.token!
        const screen = screenOfToken(store, token)
        const taken = takeSpot(deps, screen, ctx.now)
        if (taken.closed) return raw(vastEmpty(), XML)
        if (taken.record === undefined) return counting(raw(vastEmpty(), XML), taken.counts)
        const spot = `${base(token)}/vast/${taken.record.spot_id}`
        return counting(raw(vastInline({
          adId: taken.record.spot_id,
          creative: taken.creative,
          assetUrl: `${base(token)}/assets/${taken.creative.creative_id}`,
          impressionUrl: `${spot}/impression`,
          durationSeconds: taken.record.duration_seconds,
          display: screen.display,
          errorUrl: `${spot}/error?code=[ERRORCODE]`,
          tracking: { start: `${spot}/start`, firstQuartile: `${spot}/firstQuartile`, midpoint: `${spot}/midpoint`, thirdQuartile: `${spot}/thirdQuartile`, complete: `${spot}/complete` }
        }), XML), taken.counts)
      }
    }),
    route({
      ...common,
      method: 'get',
      path: '/embed/:token/vast/:spot_id/:event',
      summary: 'A VAST tracking event of a spot (204)',
      description: 'impression and start record render_started; complete records play_completed (billing, burl, and a proof of play at tier event_confirmed); quartiles and error are acknowledged. Repeats change nothing.',
      noContent: 'The event was recorded (or was already).',
      status: 204,
      errors: ['screen_not_found', 'spot_not_found', 'spot_in_progress', 'service_unavailable'],
      screen: (ctx) => screenIdOfToken(store, ctx.params.token!),
      decidedBy: (ctx) => deciderOf(ctx.params.spot_id!),
      proves: true,
      prepare: (ctx) => awaitSpot(deps, ctx.params.spot_id!),
      handler: (ctx) => {
        const screen = screenOfToken(store, ctx.params.token!)
        const event = ctx.params.event!
        if (!EVENTS.has(event)) throw new ApiError('invalid_parameter', `event must be one of ${[...EVENTS].join(', ')}.`, { param: 'event' })
        const spot = givenSpot(deps, screen, ctx.params.spot_id!, ctx.prepared as boolean)
        const recorded = store.write(() => {
          if (event === 'impression' || event === 'start') return spotEvent(deps, screen, spot, { event: 'render_started', tier: 'event_confirmed' }, ctx.now)
          if (event !== 'complete') return undefined
          const durationMs = spot.started_at !== undefined ? ctx.now - spot.started_at : spot.duration_seconds * 1000
          return spotEvent(deps, screen, spot, { event: 'play_completed', tier: 'event_confirmed', durationMs }, ctx.now)
        })
        return provedAnswer(thenProved(recorded, () => raw('', 'text/plain', 204)))
      }
    })
  ]
}
