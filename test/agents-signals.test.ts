import { ActivateSignalResponseSchema, GetSignalsResponseSchema } from '@adcp/client'
import t from 'tap'
import { tool, market, DAY, MONDAY_9AM_AUSTIN } from './helpers/agents.js'
import { approvedCreative } from './helpers/creatives.js'
import { eventually } from './helpers/eventually.js'
import { sendAudience } from './helpers/fleet.js'
import { startReceiver } from './helpers/receiver.js'
import { startTestService } from './helpers/service.js'

// AI buying agents over MCP (test/helpers/agents.ts): fEIN as AdCP signals: found, activated, targeted by packages and
// by OpenRTB bids, played only while the live audience is in the segment.

t.test('FEIN as AdCP signals: found in words, activated, and a package targeting one plays on a screen only while its live audience is in it', async (t) => {
  // Monday 09:00 in Austin: the gyms are open.
  const svc = await startTestService(t, { PICKUP_SECONDS: '5' }, { at: MONDAY_9AM_AUSTIN })
  const { embedOf, partner, screens } = await market(svc)
  const { key } = await svc.onboard('signal_buyer')
  const agentUrl = `${svc.url}/mcp`

  const found = await tool(svc, key, 'get_signals', { signal_spec: 'crowds of at least 10 people', context: { trace: 's-1' } })
  t.equal(found.error, false, JSON.stringify(found.data))
  t.ok(GetSignalsResponseSchema.safeParse(found.data).success, 'get_signals answers AdCP\'s schema')
  const [asked, ...catalog] = found.data.signals
  t.match(asked, { signal_agent_segment_id: 'fein_faces_10', signal_id: { source: 'agent', agent_url: agentUrl, id: 'fein_faces_10' }, name: /10\+ people/, signal_type: 'custom', coverage_percentage: 0, pricing_options: [{ model: 'cpm', cpm: 0 }], deployments: [{ type: 'agent', agent_url: agentUrl, is_live: false, activation_key: { type: 'segment_id', segment_id: 'fein_faces_10' } }], ext: { oohbid: { conditions: { min_faces: 10 }, screens_with_sensors: 8, screens_in_segment_now: 0 } } }, 'the segment the words ask for comes first: no gym has ten people in front of it now')
  t.ok(catalog.some((c: { signal_agent_segment_id: string }) => c.signal_agent_segment_id === 'fein_attention_50'), 'then the catalog')
  t.match(catalog.find((c: { signal_agent_segment_id: string }) => c.signal_agent_segment_id === 'fein_faces_5'), { coverage_percentage: 75, ext: { oohbid: { screens_in_segment_now: 6 } } }, 'six of the eight screens with sensors have five or more people now')
  t.same((await tool(svc, key, 'get_signals', { signal_spec: 'happy crowds with 70% attention' })).data.signals[0].signal_agent_segment_id, 'fein_attention_70_happy')
  t.same((await tool(svc, key, 'get_signals', { filters: { min_coverage_percentage: 50 } })).data.signals.map((s: { signal_agent_segment_id: string }) => s.signal_agent_segment_id), ['fein_faces_5', 'fein_attention_50', 'fein_faces_5_attention_50'], 'filtered by coverage')

  const buy = async (segment: string, sale = 'preferred') => {
    const products = (await tool(svc, key, 'get_products', { brief: 'gyms in Austin' })).data.products as Array<{ product_id: string }>
    return await tool(svc, key, 'create_media_buy', { buyer_ref: `signal-${segment}-${sale}`, start_time: 'asap', end_time: new Date(svc.clock.now() + 7 * DAY).toISOString(), packages: [{ buyer_ref: 'crowded', product_id: products.find((p) => p.product_id.endsWith(`:${sale}`))!.product_id, pricing_option_id: 'cpm_fixed', budget: 50, pacing: 'asap', targeting_overlay: { axe_include_segment: segment }, creatives: [{ creative_id: 'crowd-spot', name: 'Crowd spot', assets: { primary: { url: 'https://assets.invalid/crowd.png' } } }] }] })
  }
  const before = svc.snapshot()
  t.match(await buy('fein_faces_10'), { error: true, data: { errors: [{ code: 'invalid_parameter', field: 'packages.0.targeting_overlay.axe_include_segment', message: /activate_signal/ }] } }, 'a signal not activated cannot be targeted')
  t.match(await tool(svc, key, 'activate_signal', { signal_agent_segment_id: 'fein_faces_10', destinations: [{ type: 'platform', platform: 'dv360', account: 'x' }] }), { error: true, data: { errors: [{ code: 'invalid_parameter', field: 'destinations.0', message: /not supported.*this sales agent/ }] } }, 'another platform is not a destination: the audience is measured at the screen')
  t.match(await tool(svc, key, 'activate_signal', { signal_agent_segment_id: 'fein_faces_0' }), { error: true, data: { errors: [{ code: 'invalid_parameter', field: 'signal_agent_segment_id' }] } })
  t.match(await tool(svc, key, 'activate_signal', { signal_agent_segment_id: 'fein_furious' }), { error: true, data: { errors: [{ code: 'invalid_parameter' }] } }, 'an emotion FEIN does not measure')
  t.match(await tool(svc, key, 'activate_signal', {}), { error: true, data: { errors: [{ code: 'missing_required_field' }] } })
  t.same({ ...svc.snapshot(), outbox: 0, audit: 0 }, { ...before, outbox: 0, audit: 0 }, 'refusals write nothing')

  const activated = await tool(svc, key, 'activate_signal', { signal_agent_segment_id: 'fein_faces_10', destinations: [{ type: 'agent', agent_url: agentUrl }], context: { trace: 's-2' } })
  t.equal(activated.error, false, JSON.stringify(activated.data))
  t.ok(ActivateSignalResponseSchema.safeParse(activated.data).success, 'activate_signal answers AdCP\'s schema')
  t.match(activated.data, { deployments: [{ type: 'agent', agent_url: agentUrl, is_live: true, activation_key: { segment_id: 'fein_faces_10' } }], context: { trace: 's-2' } })
  t.match((await tool(svc, key, 'get_signals', { signal_ids: [{ source: 'agent', agent_url: agentUrl, id: 'fein_faces_10' }] })).data.signals, [{ deployments: [{ is_live: true, deployed_at: String }] }], 'get_signals shows it live for this seat')
  t.match(await buy('fein_faces_10', 'guaranteed'), { error: true, data: { errors: [{ code: 'validation_failed', field: 'packages.0.targeting_overlay.axe_include_segment' }] } }, 'guaranteed spots are booked: a condition play by play could leave them unplayed')
  const made = await buy('fein_faces_10')
  t.equal(made.error, false, JSON.stringify(made.data))
  t.match(made.data.packages, [{ targeting_overlay: { axe_include_segment: 'fein_faces_10' } }])
  await svc.service.moderator.idle()
  const creative = (await svc.request('GET', '/openrtb/v2/creatives', { key })).body.data.creatives[0]
  await svc.admin('POST', `/admin/v1/creatives/${creative.creative_id as string}/review`, { decision: 'approved', reason: 'checked for the test' })
  await svc.service.runJobs()
  t.match((await svc.request('GET', '/openrtb/v2/assignments', { key })).body.data.assignments, [{ line: 'preferred', audience: { min_faces: 10 } }], 'the placement carries the live condition')
  svc.clock.advance(10_000)

  /** The tier and creative a screen plays with this many people in front of it now. */
  const playsWith = async (device: string, faces: number) => {
    await sendAudience(svc, partner, [{ device_id: device, live_face_count: faces, attention_score: 0.6 }])
    const spot = (await svc.request('POST', `${embedOf(screens[device]!)}/spots`, { body: {} })).body.data
    return spot.creative?.creative_id === creative.creative_id ? 'the package' : spot.tier
  }
  t.equal(await playsWith('gym-1', 12), 'the package', 'twelve people at gym-1: in the segment, the package plays')
  t.equal(await playsWith('gym-2', 8), 'house', 'eight at gym-2: not in it, the screen plays the house creative')
  t.equal(await playsWith('gym-1', 3), 'house', 'the crowd at gym-1 thins to three: the package stops playing there')
  t.equal(await playsWith('gym-2', 15), 'the package', 'and gym-2 fills to fifteen: it plays there now')
  t.equal(await playsWith('gym-1', 10), 'the package', 'gym-1 back to ten: it plays there again')
  svc.clock.advance(20_000)
  const stale = (await svc.request('POST', `${embedOf(screens['gym-1']!)}/spots`, { body: {} })).body.data
  t.not(stale.creative?.creative_id, creative.creative_id, 'a measurement older than 10 s is no live audience: the package does not play on it')

  const off = await tool(svc, key, 'activate_signal', { action: 'deactivate', signal_agent_segment_id: 'fein_faces_10' })
  t.match(off.data, { deployments: [{ is_live: false }] }, 'deactivated')
  t.match(await buy('fein_faces_10'), { error: true, data: { errors: [{ code: 'invalid_parameter' }] } }, 'and no new package can target it')
  t.equal((await svc.request('GET', '/healthz')).status, 200, 'still serving')
})

t.test('an OpenRTB bid naming an activated FEIN signal plays only while the screen\'s live audience is in it', async (t) => {
  // Monday 09:00 in Austin: the gyms are open.
  const svc = await startTestService(t, { ALLOW_PRIVATE_CALLBACK_URLS: 'true' }, { at: MONDAY_9AM_AUSTIN })
  const { partner, screens, embedOf } = await market(svc)
  const rx = await startReceiver(t)
  const { key } = await svc.onboard('signal_bidder')
  await svc.admin('POST', '/admin/v1/seats/signal_bidder/approve', { reason: 'test' })
  t.equal((await tool(svc, key, 'activate_signal', { signal_agent_segment_id: 'fein_faces_10' })).error, false)
  const crid = await approvedCreative(svc, key, 'Crowd bid')
  const requests = (await svc.request('GET', '/openrtb/v2/adslots?format=openrtb&limit=10', { key })).body.data.bid_requests as any[]
  const impOf = (device: string) => requests.find((r) => r.ext.trb.screen_id === screens[device]).imp[0].id as string
  const bid = async (id: string, device: string, segment: string) => await svc.request('POST', '/openrtb/v2/bid', { key, body: { id, seatbid: [{ bid: [{ id, impid: impOf(device), price: 20, crid, adm: '<div>crowd</div>', adomain: ['crowd.example'], nurl: `${rx.url}/win?bid=${id}`, lurl: `${rx.url}/loss?bid=${id}&code=\${AUCTION_LOSS}`, ext: { oohbid: { segment } } }] }] } })

  const refused = await bid('b-0', 'gym-1', 'fein_faces_20')
  t.match(refused.body.data, { accepted: 0, rejected: 1, results: [{ status: 'rejected', reason: 'invalid_segment', detail: /not a FEIN signal this seat activated/, stored: false }] }, 'a segment the seat has not activated rejects the bid')

  t.match((await bid('b-1', 'gym-1', 'fein_faces_10')).body.data, { accepted: 1, results: [{ stored: true }] })
  t.match((await bid('b-2', 'gym-2', 'fein_faces_10')).body.data, { accepted: 1 })
  await sendAudience(svc, partner, [{ device_id: 'gym-1', live_face_count: 3, attention_score: 0.6 }, { device_id: 'gym-2', live_face_count: 12, attention_score: 0.6 }])
  t.match((await svc.request('POST', `${embedOf(screens['gym-1']!)}/spots`, { body: {} })).body.data, { tier: 'house' }, 'three people at gym-1: the bid does not play')
  t.match((await svc.request('POST', `${embedOf(screens['gym-2']!)}/spots`, { body: {} })).body.data, { tier: 'open_auction', creative: { creative_id: crid } }, 'twelve at gym-2: it wins')
  await eventually(t, 'three notices (two losses, a win) at the receiver', () => rx.received.length, { until: (n) => n >= 3 })
  t.same(rx.received.map((r) => [r.path, r.query.get('bid'), r.query.get('code')]).sort(), [['/loss', 'b-0', '3'], ['/loss', 'b-1', '1000'], ['/win', 'b-2', null]], 'gym-1\'s bid loses with code 1000 (live audience not in its segment); gym-2\'s wins; the refused bid had its lurl at intake (3, invalid bid response)')
  t.equal((await svc.request('GET', '/healthz')).status, 200, 'still serving')
})
