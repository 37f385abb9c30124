import { iso } from '../clock.js'
import { ApiError } from '../errors.js'
import type { ActivateSignalRequest, GetSignalsRequest, LiveAudience } from '../generated/types.js'
import { liveSignals, type LiveSignals } from '../inventory/fein.js'
import { audienceMatches } from '../inventory/live-audience.js'
import { interpret } from '../inventory/nl-query.js'
import { agentUrl, checkAccount, record, type ToolCall } from './call.js'
import { audienceOfSegment, emotionNamed, seatSegmentAudience, segmentIdOf } from '../inventory/segments.js'

/** The segments listed when a buyer asks for no audience in particular. */
const CATALOG: LiveAudience[] = [
  { min_faces: 5 },
  { min_faces: 20 },
  { min_attention: 0.5 },
  { min_attention: 0.7 },
  { min_faces: 5, min_attention: 0.5 },
  { emotion: 'happy' },
  { emotion: 'surprised' },
  { emotion: 'neutral' }
]

/** FEIN signals are the seller's own measurement, sold with its screens: no data fee. */
const PRICING = [{ pricing_option_id: 'included', model: 'cpm', cpm: 0, currency: 'USD' }]

function nameOf (c: LiveAudience): string {
  const parts = [
    ...(c.min_faces !== undefined ? [`${c.min_faces}+ people watching`] : []),
    ...(c.min_attention !== undefined ? [`attention ${Math.round(c.min_attention * 100)}%+`] : []),
    ...(c.emotion !== undefined ? [`${c.emotion} crowd`] : [])
  ]
  return `Live audience: ${parts.join(', ')}`
}

/** The live signals of the screens on sale with sensors (in the countries given), read once for every segment's coverage. */
function sensedScreens (call: ToolCall, countries: string[] | undefined): LiveSignals[] {
  const sources = call.inventory.sourcesEnabled()
  const live: LiveSignals[] = []
  for (const { value: s } of call.store.screens.getRange()) {
    if (!s.auction_enabled || !sources.includes(s.source) || !s.capabilities.fein) continue
    if (countries !== undefined && !countries.includes(s.location.country)) continue
    live.push(liveSignals(call.store.fein.get(s.screen_id), call.now))
  }
  return live
}

/** The conditions a buyer's words ask for, if they ask for any the screens measure. */
function askedFor (words: string | undefined): LiveAudience | undefined {
  if (words === undefined || words.trim() === '') return undefined
  const { interpretation: it } = interpret(words)
  const c: LiveAudience = {}
  if (it.min_crowd !== null) c.min_faces = Math.max(1, Math.min(10_000, it.min_crowd))
  if (it.min_attention !== null) c.min_attention = Math.min(100, it.min_attention) / 100
  const emotion = it.emotion !== null ? emotionNamed(it.emotion) : undefined
  if (emotion !== undefined) c.emotion = emotion
  return Object.keys(c).length > 0 ? c : undefined
}

/**
 * get_signals: FEIN's live-audience segments, the one a buyer's words ask for first, each with its coverage of the
 * screens on sale now and whether this seat has activated it on this agent.
 */
export function getSignals (call: ToolCall, args: Record<string, unknown>): Record<string, unknown> {
  const req = args as GetSignalsRequest
  checkAccount(call, req.account)
  const url = agentUrl(call)
  const asked = askedFor(req.signal_spec ?? req.brief)
  const wanted = req.signal_ids !== undefined
    ? req.signal_ids.map((s) => audienceOfSegment(s.id)).filter((c): c is LiveAudience => c !== undefined)
    : [...(asked !== undefined ? [asked] : []), ...CATALOG]
  const seen = new Set<string>()
  const sensed = sensedScreens(call, req.countries?.map((c) => c.toUpperCase()))
  const signals = wanted.flatMap((c) => {
    const id = segmentIdOf(c)
    if (seen.has(id)) return []
    seen.add(id)
    const sensors = sensed.length
    const matching = sensed.filter((live) => audienceMatches(c, live)).length
    const coverage = sensors === 0 ? 0 : Math.round((matching / sensors) * 1000) / 10
    const type = asked !== undefined && id === segmentIdOf(asked) && !CATALOG.some((k) => segmentIdOf(k) === id) ? 'custom' : 'owned'
    const activated = call.store.signalActivations.get([call.seat.seat_id.toLowerCase(), id])
    return [{
      signal_id: { source: 'agent', agent_url: url, id },
      signal_agent_segment_id: id,
      name: nameOf(c),
      description: `Screens whose FEIN sensors measure this audience in front of them now (${[c.min_faces !== undefined ? `live_face_count >= ${c.min_faces}` : '', c.min_attention !== undefined ? `attention_score >= ${c.min_attention}` : '', c.emotion !== undefined ? `dominant_emotion ${c.emotion}` : ''].filter((x) => x !== '').join(', ')}; a signal older than 10 s meets none). Activated, a package targeting it plays on a screen only while the screen's audience is in it.`,
      value_type: 'binary',
      signal_type: type,
      data_provider: call.config.operator.name,
      coverage_percentage: coverage,
      deployments: [{ type: 'agent', agent_url: url, account: call.seat.seat_id, is_live: activated !== undefined, activation_key: { type: 'segment_id', segment_id: id }, ...(activated !== undefined ? { deployed_at: activated.activated_at } : { estimated_activation_duration_minutes: 0 }) }],
      pricing_options: PRICING,
      ext: { oohbid: { conditions: c, screens_with_sensors: sensors, screens_in_segment_now: matching } }
    }]
  }).filter((s) => {
    const f = req.filters
    if (f?.catalog_types !== undefined && !(f.catalog_types as string[]).includes(s.signal_type)) return false
    if (f?.data_providers !== undefined && !(f.data_providers as string[]).includes(s.data_provider)) return false
    return f?.min_coverage_percentage === undefined || s.coverage_percentage >= f.min_coverage_percentage
  })
  return { signals: signals.slice(0, req.max_results ?? 100), sandbox: call.seat.status === 'sandbox' }
}

/**
 * activate_signal: records (or, with action deactivate, removes) the seat's activation of a FEIN segment on this
 * agent. Another destination is refused: the audience is measured at the screen and acted on where its spot is decided.
 */
export function activateSignal (call: ToolCall, args: Record<string, unknown>): Record<string, unknown> {
  const req = args as ActivateSignalRequest
  checkAccount(call, req.account)
  const url = agentUrl(call)
  const id = req.signal_agent_segment_id ?? (typeof req.signal_id === 'string' ? req.signal_id : req.signal_id?.id)
  if (id === undefined) throw new ApiError('missing_required_field', 'Name the signal: signal_agent_segment_id, as get_signals lists it.', { param: 'signal_agent_segment_id' })
  const param = req.signal_agent_segment_id !== undefined ? 'signal_agent_segment_id' : 'signal_id'
  if (audienceOfSegment(id) === undefined) throw new ApiError('invalid_parameter', `No signal ${id}: get_signals lists this agent's FEIN signals.`, { param })
  const destinations = [...(req.destinations ?? []), ...(req.destination !== undefined ? [req.destination as { type?: string, platform?: string, agent_url?: string }] : [])]
  for (const [i, d] of destinations.entries()) {
    const ours = d.type === 'agent' && d.agent_url === url
    if (!ours) throw new ApiError('invalid_parameter', `Destination ${d.platform ?? d.agent_url ?? 'given'} is not supported: FEIN signals are measured live at the screen and activate only on this sales agent ({"type": "agent", "agent_url": "${url}"}), where each screen's spot is decided.`, { param: req.destination !== undefined && i === destinations.length - 1 ? 'destination' : `destinations.${i}` })
  }
  const key: [string, string] = [call.seat.seat_id.toLowerCase(), id]
  const deactivate = req.action === 'deactivate'
  const at = iso(call.now)
  record(call, () => {
    if (deactivate) call.store.signalActivations.removeSync(key)
    else if (call.store.signalActivations.get(key) === undefined) call.store.signalActivations.putSync(key, { activated_at: at, ...(req.buyer_campaign_ref !== undefined ? { buyer_campaign_ref: req.buyer_campaign_ref } : {}) })
  })
  const activated = call.store.signalActivations.get(key)
  return {
    deployments: [{ type: 'agent', agent_url: url, account: call.seat.seat_id, is_live: !deactivate, activation_key: { type: 'segment_id', segment_id: id }, ...(!deactivate ? { deployed_at: activated?.activated_at ?? at } : {}) }],
    sandbox: call.seat.status === 'sandbox'
  }
}

/**
 * The live audience an activated signal means, for a package that targets it; invalid_parameter for a signal the seat
 * has not activated (or that is not ours).
 */
export function activatedAudience (call: Pick<ToolCall, 'store' | 'seat'>, segmentId: string, param: string): LiveAudience {
  const c = seatSegmentAudience(call.store, call.seat.seat_id, segmentId)
  if (c === undefined) throw new ApiError('invalid_parameter', `Signal ${segmentId} is not activated for this seat: find it with get_signals and activate it with activate_signal first.`, { param })
  return c
}
