import { execFile } from 'node:child_process'
import { createHmac } from 'node:crypto'
import { promisify } from 'node:util'
import { ActivateSignalResponseSchema, CalibrateContentResponseSchema, CreatePropertyListResponseSchema, DeletePropertyListResponseSchema, GetContentStandardsResponseSchema, GetMediaBuyDeliveryResponseSchema, GetMediaBuysResponseSchema, GetPropertyListResponseSchema, GetSignalsResponseSchema, ListContentStandardsResponseSchema, ListCreativesResponseSchema, ListPropertyListsResponseSchema, ProvidePerformanceFeedbackResponseSchema, UpdatePropertyListResponseSchema, ValidateContentDeliveryResponseSchema } from '@adcp/client'
import t from 'tap'
import { assetServer } from './helpers/asset-server.js'
import { approvedCreative, unapprovedCreative, uploadedCreative } from './helpers/creatives.js'
import { adImage } from './helpers/media.js'
import { startReceiver } from './helpers/receiver.js'
import { deviceBody, registerDevices, registerPartner, sendAudience } from './helpers/fleet.js'
import { startTestService, type TestService } from './helpers/service.js'

// AI buying agents over MCP (POST /mcp, AdCP media buy), as an agent reaches them: JSON-RPC over real HTTP, and the
// official AdCP conformance runner (@adcp/client's `adcp test`) driving the same endpoint.

const run = promisify(execFile)
const ACCEPT = 'application/json, text/event-stream'
const DAY = 86_400_000
const SCENARIOS = ['health_check', 'capability_discovery', 'discovery', 'creative_flow', 'behavior_analysis', 'signals_flow', 'create_media_buy', 'full_sales_flow', 'creative_sync', 'error_handling', 'validation', 'temporal_validation', 'pricing_edge_cases', 'response_consistency', 'creative_inline', 'governance_property_lists', 'governance_content_standards']

async function rpc (svc: TestService, key: string | undefined, message: unknown, headers: Record<string, string> = {}, query = '') {
  return await svc.request('POST', `/mcp${query}`, { ...(key !== undefined ? { key } : {}), headers: { accept: ACCEPT, ...headers }, raw: JSON.stringify(message) })
}

let ids = 0
/** Calls a tool; its answer (structuredContent) and whether it is a refusal. */
async function tool (svc: TestService, key: string, name: string, args: Record<string, unknown>, headers: Record<string, string> = {}, query = '') {
  const r = await rpc(svc, key, { jsonrpc: '2.0', id: ++ids, method: 'tools/call', params: { name, arguments: args } }, headers, query)
  if (r.status !== 200 || r.body.result === undefined) throw new Error(`${name}: ${r.status} ${r.text}`)
  return { data: r.body.result.structuredContent, error: r.body.result.isError === true }
}

/** The official runner's report for one scenario. */
async function conformance (svc: TestService, key: string, scenario: string, extra: string[] = []) {
  const { stdout } = await run(process.execPath, ['node_modules/@adcp/client/bin/adcp.js', 'test', `${svc.url}/mcp`, scenario, '--protocol', 'mcp', '--auth', key, '--json', ...extra], { timeout: 120_000 }).catch((err: { stdout?: string }) => ({ stdout: err.stdout ?? '' }))
  return JSON.parse(stdout.slice(stdout.indexOf('{'))) as { overall_passed: boolean, summary: string, steps: Array<{ step: string, passed: boolean, error?: string, created_id?: string }> }
}

/** Austin gyms with a live audience (8 people per play) and floors of $9-$14, a Dallas gym and an Austin airport. */
async function market (svc: TestService) {
  const partner = await registerPartner(svc)
  const screens = await registerDevices(svc, partner, [
    ...[1, 2, 3, 4, 5, 6].map((i) => deviceBody(`gym-${i}`, { floor_price_cpm: 8 + i })),
    deviceBody('gym-dallas', { location: { city: 'Dallas', lat: 32.7767, lng: -96.797 }, floor_price_cpm: 6 }),
    deviceBody('airport-1', { location: { venue_type: 'airport' }, floor_price_cpm: 12 })
  ])
  await sendAudience(svc, partner, [1, 2, 3, 4, 5, 6].map((i) => ({ device_id: `gym-${i}`, live_face_count: 8, attention_score: 0.6 })))
  const devices = (await svc.request('GET', '/v1/partner/devices', { key: partner.key })).body.data.devices as Array<{ device_id: string, screen_id: string, embed_url: string }>
  const embedOf = (screenId: string) => new URL(devices.find((d) => d.screen_id === screenId)!.embed_url).pathname
  return { partner, screens, embedOf }
}

/** The product of the Austin gyms sold one way (guaranteed, preferred or auction). */
async function gymProduct (svc: TestService, key: string, sale: string): Promise<string> {
  return ((await tool(svc, key, 'get_products', { brief: 'gyms in Austin' })).data.products as Array<{ product_id: string }>).find((p) => p.product_id.endsWith(`:${sale}`))!.product_id
}

/**
 * Approves the seat's synced creatives (all, or those the buyer's creative_ids name) as an operator would once
 * moderation, unable to fetch the test assets, turned them down; then the jobs activate their packages. Answers their
 * platform ids, in list_creatives' order.
 */
async function approveSynced (svc: TestService, key: string, creativeIds?: string[]): Promise<string[]> {
  await svc.service.moderator.idle()
  const listed = (await tool(svc, key, 'list_creatives', {})).data.creatives as Array<{ creative_id: string, ext: { oohbid: { platform_id: string } } }>
  const ids = listed.filter((c) => creativeIds === undefined || creativeIds.includes(c.creative_id)).map((c) => c.ext.oohbid.platform_id)
  for (const id of ids) await svc.admin('POST', `/admin/v1/creatives/${id}/review`, { decision: 'approved', reason: 'checked for the test' })
  await svc.service.runJobs()
  return ids
}

t.test('tools/list and get_adcp_capabilities for a seat key with mcp:tools, each call audited', async (t) => {
  const svc = await startTestService(t)
  const { key } = await svc.onboard('agent_buyer')
  const list = await rpc(svc, key, { jsonrpc: '2.0', id: 1, method: 'tools/list' })
  t.equal(list.status, 200)
  t.match(list.headers.get('content-type'), /application\/json/)
  t.same(list.body.result.tools.map((tool: { name: string }) => tool.name), ['get_adcp_capabilities', 'get_products', 'list_creative_formats', 'list_authorized_properties', 'create_media_buy', 'update_media_buy', 'sync_creatives', 'list_creatives', 'get_media_buys', 'get_media_buy_delivery', 'provide_performance_feedback', 'get_signals', 'activate_signal', 'create_property_list', 'get_property_list', 'update_property_list', 'list_property_lists', 'delete_property_list', 'list_content_standards', 'get_content_standards', 'calibrate_content', 'validate_content_delivery', 'sync_audiences'])
  t.ok(list.body.result.tools.every((tool: { inputSchema: { type: string } }) => tool.inputSchema.type === 'object'), 'input schemas come from schemas/')
  t.match(list.body.result.tools.find((tool: { name: string }) => tool.name === 'create_media_buy').inputSchema, { required: ['buyer_ref', 'packages', 'start_time', 'end_time'] })
  const caps = await rpc(svc, key, { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'get_adcp_capabilities', arguments: { context: { trace: 't-1' } } } })
  t.equal(caps.status, 200)
  t.match(caps.body.result.structuredContent, { adcp: { major_versions: [3] }, supported_protocols: ['media_buy', 'signals', 'creative', 'governance'], account: { sandbox: true }, media_buy: { supported_pricing_models: ['cpm'], features: { inline_creative_management: true, property_list_filtering: true, content_standards: true } }, governance: { property_features: [{ feature_id: 'fein', type: 'binary' }, { feature_id: 'video' }, { feature_id: 'audio' }, { feature_id: 'touch' }, { feature_id: 'floor_cpm', type: 'quantitative' }] }, context: { trace: 't-1' } })
  t.same(JSON.parse(caps.body.result.content[0].text), caps.body.result.structuredContent, 'the same answer as text')
  const audit = await svc.admin('GET', '/admin/v1/audit')
  t.match(audit.body.data.events.find((e: { type: string }) => e.type === 'audit.agent.tool_called'), { actor: 'agent', subject: 'seat:agent_buyer', data: { tool: 'get_adcp_capabilities', key_id: String } })
})

t.test('refused: no key, a key without mcp:tools, bad arguments, unknown tools, other methods', async (t) => {
  const svc = await startTestService(t)
  const { key } = await svc.onboard('narrow_buyer')
  t.match(await rpc(svc, undefined, { jsonrpc: '2.0', id: 1, method: 'tools/list' }), { status: 401, body: { error_code: 'authentication_required' } })
  // Sandbox keys pass every scope check: approve the seat, then mint a key without mcp:tools.
  await svc.admin('POST', '/admin/v1/seats/narrow_buyer/approve', { reason: 'test' })
  const narrow = (await svc.request('POST', '/openrtb/v2/keys', { key, body: { scopes: ['bid:write', 'inventory:read'] } })).body.data.key
  t.match(await rpc(svc, narrow, { jsonrpc: '2.0', id: 1, method: 'tools/list' }), { status: 403, body: { error_code: 'missing_scope', required_scope: 'mcp:tools' } })
  const before = svc.snapshot()
  const bad = await rpc(svc, key, { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'get_adcp_capabilities', arguments: { budget: 5 } } })
  t.equal(bad.status, 200)
  t.equal(bad.body.result.isError, true, 'a refused task is the tool\'s answer, which an agent can read and correct')
  t.match(bad.body.result.structuredContent, { errors: [{ code: String, message: /budget/ }] })
  const unknown = await rpc(svc, key, { jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'delete_everything', arguments: {} } })
  t.match(unknown.body, { error: { code: -32602, message: /No tool delete_everything/ } })
  const broken = await svc.request('POST', '/mcp', { key, headers: { accept: ACCEPT }, raw: '{"jsonrpc": "2.0", "id": ' })
  t.match(broken, { status: 400, body: { error: { code: -32700 } } }, 'malformed JSON is a JSON-RPC parse error')
  t.match(await svc.request('GET', '/mcp', { key }), { status: 405, body: { error_code: 'method_not_allowed' } })
  t.equal((await svc.request('GET', '/mcp', { key })).headers.get('allow'), 'POST', 'no server-sent events: the endpoint is stateless')
  const after = svc.snapshot()
  t.same({ ...after, outbox: 0, audit: 0 }, { ...before, outbox: 0, audit: 0 }, 'nothing written but the audit trail of the calls')
  t.equal((await svc.request('GET', '/healthz')).status, 200, 'still serving')
})

t.test('the AdCP conformance runner passes its media-buy, creative, signals, governance and capability scenarios', async (t) => {
  const svc = await startTestService(t)
  await market(svc)
  // Two seats: a stateless MCP client makes about three requests a tool call, and the scenarios together make more
  // than one sandbox seat's 300 agent requests a minute.
  const keys = [(await svc.onboard('conformance')).key, (await svc.onboard('conformance_2')).key]
  for (const [i, scenario] of SCENARIOS.entries()) {
    const report = await conformance(svc, keys[i % 2]!, scenario)
    t.equal(report.overall_passed, true, `${scenario}: ${report.summary}${report.steps.filter((s) => !s.passed).map((s) => `\n  ${s.step}: ${s.error}`).join('')}`)
  }
  t.ok(svc.snapshot().mediaBuys! >= 2, 'a sandbox seat\'s runs are real (X-Dry-Run changes nothing there): the buys exist')
})

t.test('get_products reads the brief: segments, prices from the screens, forecasts, properties as in sellers.json', async (t) => {
  const svc = await startTestService(t)
  const { partner } = await market(svc)
  const { key } = await svc.onboard('planner')
  const gyms = await tool(svc, key, 'get_products', { buying_mode: 'brief', brief: 'gyms in Austin with attentive crowds', brand: { domain: 'acme.example' } })
  t.equal(gyms.error, false)
  t.same(gyms.data.products.map((p: { product_id: string }) => p.product_id), ['dooh:gym:US:TX:austin:guaranteed', 'dooh:gym:US:TX:austin:preferred', 'dooh:gym:US:TX:austin:auction'], 'one segment sold three ways: Dallas and the airport are not what the brief asked')
  const [guaranteed, preferred, auction] = gyms.data.products
  t.match(guaranteed, {
    delivery_type: 'guaranteed',
    channels: ['dooh'],
    pricing_options: [{ pricing_option_id: 'cpm_fixed', pricing_model: 'cpm', currency: 'USD', fixed_price: 16.8, min_spend_per_package: Number }],
    format_ids: [{ id: 'dooh_1920x1080_15s', width: 1920, height: 1080, duration_ms: 15000 }],
    forecast: { method: 'guaranteed', currency: 'USD', points: [{ budget: 1000, metrics: { impressions: { mid: 59523 } } }] },
    brief_relevance: /6 screen\(s\) matched/,
    ext: { oohbid: { screens: 6, impressions_per_play: 8, floor_cpm: { min: 9, max: 14 } } }
  }, 'fixed CPM 20% over the top floor ($14); $1,000 buys 59,523 impressions')
  t.match(preferred, { delivery_type: 'non_guaranteed', pricing_options: [{ pricing_option_id: 'cpm_fixed', fixed_price: 15.4 }], forecast: { method: 'estimate' } }, 'preferred: 10% over the top floor, nothing booked')
  t.match(auction, { delivery_type: 'non_guaranteed', pricing_options: [{ pricing_option_id: 'cpm_auction', floor_price: 14, max_bid: true }] }, 'auction: bids from the top floor, so every screen can sell to it')
  t.notOk('fixed_price' in auction.pricing_options[0])
  t.same(guaranteed.publisher_properties, [{ publisher_domain: `${partner.slug}.example`, selection_type: 'by_id', property_ids: guaranteed.publisher_properties[0].property_ids }])
  t.equal(guaranteed.publisher_properties[0].property_ids.length, 6)
  const sellers = (await svc.request('GET', '/sellers.json')).body.sellers.map((s: { domain?: string }) => s.domain)
  const properties = await tool(svc, key, 'list_authorized_properties', {})
  t.same(properties.data.publisher_domains, sellers, 'the publishers are the sellers of /sellers.json')
  const airports = await tool(svc, key, 'get_products', { brief: 'airport screens' })
  t.same(airports.data.products.map((p: { product_id: string }) => p.product_id), ['dooh:airport:US:*:*:guaranteed', 'dooh:airport:US:*:*:preferred', 'dooh:airport:US:*:*:auction'])
  const ids = async (filters: Record<string, unknown>) => (await tool(svc, key, 'get_products', { brief: 'airport screens', filters })).data.products.map((p: { product_id: string }) => p.product_id.split(':').pop())
  t.same(await ids({ delivery_type: 'non_guaranteed' }), ['preferred', 'auction'])
  t.same(await ids({ delivery_type: 'guaranteed' }), ['guaranteed'])
  t.same(await ids({ is_fixed_price: false }), ['auction'])
  t.same(await ids({ is_fixed_price: true, delivery_type: 'non_guaranteed' }), ['preferred'])
  const none = await tool(svc, key, 'get_products', { brief: 'gyms', filters: { channels: ['podcast'] } })
  t.same(none.data.products, [], 'no podcast inventory here')
  const formats = await tool(svc, key, 'list_creative_formats', {})
  t.match(formats.data.formats, [{ format_id: { id: 'dooh_1920x1080_15s' }, type: 'dooh', assets: [{ asset_id: 'primary', required: true }] }])
})

t.test('a media buy made by the runner becomes the campaign REST clients see, plays on a screen and reports delivery', async (t) => {
  const svc = await startTestService(t, { PICKUP_SECONDS: '5' })
  const { embedOf, partner, screens } = await market(svc)
  const { key } = await svc.onboard('agency')
  const report = await conformance(svc, key, 'full_sales_flow')
  t.equal(report.overall_passed, true, report.summary)
  const mediaBuyId = report.steps.find((s) => s.created_id !== undefined)!.created_id!
  t.same((await svc.request('GET', '/openrtb/v2/campaigns', { key })).body.data.campaigns, [], 'no campaign before the package has a creative')
  const synced = await tool(svc, key, 'sync_creatives', {
    creatives: [{ creative_id: 'agency-spot-1', name: 'Agency spot', format_id: 'dooh_1920x1080_15s', assets: { primary: { url: 'https://assets.invalid/agency.png', format: 'png', width: 1920, height: 1080 } } }],
    assignments: { 'agency-spot-1': [`${mediaBuyId}/pkg-0`] }
  })
  t.match(synced.data.creatives, [{ creative_id: 'agency-spot-1', action: 'created', platform_id: /^cr_/, status: 'pending_review', assigned_to: [`${mediaBuyId}/pkg-0`] }])
  const creativeId = synced.data.creatives[0].platform_id
  t.equal((await tool(svc, key, 'sync_creatives', { creatives: [{ creative_id: 'agency-spot-1', name: 'Agency spot', assets: { primary: { url: 'https://assets.invalid/agency.png', format: 'png' } } }] })).data.creatives[0].action, 'unchanged', 'syncing it again changes nothing')
  const approvals = async () => {
    const r = await tool(svc, key, 'get_media_buys', { media_buy_ids: [mediaBuyId], include_snapshot: true })
    t.ok(GetMediaBuysResponseSchema.safeParse(r.data).success, 'get_media_buys answers AdCP\'s schema')
    return r.data.media_buys[0].packages[0]
  }
  await svc.service.moderator.idle()
  t.match((await approvals()).creative_approvals, [{ creative_id: 'agency-spot-1', approval_status: 'rejected', rejection_reason: /could not be fetched/ }], 'an agent sees moderation\'s decision and why (the asset cannot be fetched here)')
  await svc.admin('POST', `/admin/v1/creatives/${creativeId}/review`, { decision: 'approved', reason: 'checked for the test' })
  t.match((await approvals()).creative_approvals, [{ approval_status: 'approved' }], 'and the operator\'s approval')
  await svc.service.runJobs()
  const campaigns = (await svc.request('GET', '/openrtb/v2/campaigns', { key })).body.data.campaigns
  t.match(campaigns, [{ name: /\/ pkg-0$/, creative_id: creativeId, budget_usd: 1500, status: 'scheduled' }], 'the same campaign a REST client sees, with the budget the runner raised to')
  const [placement] = (await svc.request('GET', '/openrtb/v2/assignments', { key })).body.data.assignments
  t.match(placement, { campaign_id: campaigns[0].campaign_id, creative_id: creativeId, source: 'media_buy', status: 'active' })
  t.equal(placement.screen_ids.length, 7, 'the seven US gyms of the guaranteed product the runner bought')
  svc.clock.advance(2 * DAY)
  await svc.service.runJobs()
  await sendAudience(svc, partner, [{ device_id: 'gym-1', live_face_count: 8 }])
  t.ok(placement.screen_ids.includes(screens['gym-1']))
  const embed = embedOf(screens['gym-1']!)
  const spot = (await svc.request('POST', `${embed}/spots`, { body: {} })).body.data
  t.match(spot, { tier: 'guaranteed', creative: { creative_id: creativeId } }, 'the screen plays the buy')
  await svc.request('POST', `${embed}/spots/${spot.spot_id}/events`, { body: { event: 'render_started' } })
  await svc.request('POST', `${embed}/spots/${spot.spot_id}/events`, { body: { event: 'play_completed', duration_ms: 15_000 } })
  t.match((await svc.request('GET', `/openrtb/v2/campaigns/${campaigns[0].campaign_id}`, { key })).body.data, { status: 'active', impressions: 8 }, 'one play of eight people')
  const delivery = await tool(svc, key, 'get_media_buy_delivery', { media_buy_ids: [mediaBuyId] })
  t.match(delivery.data, {
    currency: 'USD',
    aggregated_totals: { impressions: 8, spend: 0.1344, media_buy_count: 1 },
    media_buy_deliveries: [{ media_buy_id: mediaBuyId, status: 'active', totals: { impressions: 8 }, by_package: [{ package_id: 'pkg-0', impressions: 8, spend: 0.1344, rate: 16.8, delivery_status: 'delivering' }] }]
  }, 'eight impressions at the fixed $16.80 CPM')
  t.match((await approvals()).snapshot, { impressions: 8, spend: 0.1344, delivery_status: 'delivering', currency: 'USD' }, 'a snapshot of what the package delivered')
  const paused = await tool(svc, key, 'update_media_buy', { media_buy_id: mediaBuyId, paused: true })
  t.match(paused.data, { status: 'paused', affected_packages: [{ package_id: 'pkg-0' }] })
  t.equal((await svc.request('GET', `/openrtb/v2/campaigns/${campaigns[0].campaign_id}`, { key })).body.data.status, 'paused')
  t.equal((await svc.request('GET', '/openrtb/v2/assignments', { key })).body.data.assignments[0].status, 'paused')
  t.match((await svc.request('POST', `${embed}/spots`, { body: {} })).body.data, { tier: 'house', creative: null }, 'a paused buy does not play')
})

t.test('preferred and auction packages compete in the screens\' own waterfall, in their dayparts, within their budgets', async (t) => {
  const svc = await startTestService(t, { PICKUP_SECONDS: '5' })
  // Monday 09:00 in Austin.
  svc.clock.set(Date.UTC(2026, 10, 30, 15, 0, 0))
  const { embedOf, partner, screens } = await market(svc)
  const { key } = await svc.onboard('open_buyer')
  const products = (await tool(svc, key, 'get_products', { brief: 'gyms in Austin' })).data.products as Array<{ product_id: string }>
  const productOf = (sale: string) => products.find((p) => p.product_id.endsWith(`:${sale}`))!.product_id
  const end = new Date(svc.clock.now() + 7 * DAY).toISOString()
  const base = { buyer_ref: 'open', start_time: 'asap', end_time: end }
  const preferred = { buyer_ref: 'pref', product_id: productOf('preferred'), pricing_option_id: 'cpm_fixed', budget: 50, pacing: 'asap', creatives: [{ creative_id: 'open-pref', name: 'Preferred spot', assets: { primary: { url: 'https://assets.invalid/pref.png' } } }] }
  const afternoons = { daypart_targets: [{ days: ['monday', 'tuesday'], start_hour: 13, end_hour: 17, label: 'Afternoon' }] }
  const auction = { buyer_ref: 'auc', product_id: productOf('auction'), pricing_option_id: 'cpm_auction', bid_price: 20, budget: 100, pacing: 'asap', targeting_overlay: afternoons, creatives: [{ creative_id: 'open-auc', name: 'Auction spot', assets: { primary: { url: 'https://assets.invalid/auc.png' } } }] }
  const before = svc.snapshot()
  const refusals: Array<[string, Record<string, unknown>, string, string]> = [
    ['an auction package without bid_price', { ...auction, bid_price: undefined }, 'missing_required_field', 'packages.0.bid_price'],
    ['a bid below the floor ($14, the top floor among the gyms)', { ...auction, bid_price: 13.99 }, 'invalid_parameter', 'packages.0.bid_price'],
    ['a bid on the preferred fixed price', { ...preferred, bid_price: 20 }, 'invalid_parameter', 'packages.0.bid_price'],
    ['the auction pricing option on a preferred product', { ...preferred, pricing_option_id: 'cpm_auction' }, 'invalid_parameter', 'packages.0.pricing_option_id'],
    ['a daypart that ends before it starts', { ...auction, targeting_overlay: { daypart_targets: [{ days: ['monday'], start_hour: 17, end_hour: 13 }] } }, 'invalid_parameter', 'packages.0.targeting_overlay.daypart_targets.0.end_hour'],
    ['a weekday AdCP does not name', { ...auction, targeting_overlay: { daypart_targets: [{ days: ['mon'], start_hour: 13, end_hour: 17 }] } }, 'invalid_parameter', 'packages.0.targeting_overlay.daypart_targets.0.days.0'],
    ['targeting other than dayparts', { ...auction, targeting_overlay: { geo_countries: ['US'] } }, 'invalid_parameter', 'packages.0.targeting_overlay']
  ]
  for (const [name, pkg, code, field] of refusals) {
    const r = await tool(svc, key, 'create_media_buy', { ...base, packages: [pkg] })
    t.equal(r.error, true, name)
    t.match(r.data.errors?.[0], { code, field }, name)
  }
  t.same({ ...svc.snapshot(), outbox: 0, audit: 0 }, { ...before, outbox: 0, audit: 0 }, 'refused buys write nothing')

  const bookedBefore = svc.snapshot().booked
  const made = await tool(svc, key, 'create_media_buy', { ...base, packages: [preferred, auction] })
  t.equal(made.error, false, JSON.stringify(made.data))
  t.match(made.data.packages, [
    { package_id: 'pkg-0', ext: { oohbid: { delivery_type: 'non_guaranteed', sale: 'preferred', fixed_price: 15.4 } } },
    { package_id: 'pkg-1', bid_price: 20, targeting_overlay: { daypart_targets: [{ days: ['monday', 'tuesday'], start_hour: 13, end_hour: 17 }] }, ext: { oohbid: { delivery_type: 'non_guaranteed', sale: 'auction', bid_price: 20, floor_price: 14 } } }
  ])
  t.equal(svc.snapshot().booked, bookedBefore, 'non-guaranteed packages book no spot')
  const mediaBuyId = made.data.media_buy_id
  await svc.service.moderator.idle()
  const creatives = (await svc.request('GET', '/openrtb/v2/creatives', { key })).body.data.creatives as Array<{ creative_id: string, crid: string }>
  for (const c of creatives) await svc.admin('POST', `/admin/v1/creatives/${c.creative_id}/review`, { decision: 'approved', reason: 'checked for the test' })
  const idOf = (crid: string) => creatives.find((c) => c.crid === crid)!.creative_id
  await svc.service.runJobs()
  const placements = (await svc.request('GET', '/openrtb/v2/assignments', { key })).body.data.assignments
  t.match(placements.find((a: { line: string }) => a.line === 'preferred'), { cpm: 15.4, pacing: 'asap', source: 'media_buy' })
  t.match(placements.find((a: { line: string }) => a.line === 'auction'), { cpm: 20, dayparts: [{ days: ['mon', 'tue'], start_hour: 13, end_hour: 17 }] })
  const campaigns = (await svc.request('GET', '/openrtb/v2/campaigns', { key })).body.data.campaigns
  t.ok(campaigns.every((c: { media_buy_id?: string }) => c.media_buy_id === mediaBuyId), 'each package is a campaign of the buy, which bids nowhere else')

  const embed = embedOf(screens['gym-1']!)
  const play = async () => {
    const spot = (await svc.request('POST', `${embed}/spots`, { body: {} })).body.data
    if (spot.tier !== 'house') {
      await svc.request('POST', `${embed}/spots/${spot.spot_id}/events`, { body: { event: 'render_started' } })
      await svc.request('POST', `${embed}/spots/${spot.spot_id}/events`, { body: { event: 'play_completed', duration_ms: 15_000 } })
    }
    return spot
  }
  const packages = async () => (await tool(svc, key, 'get_media_buy_delivery', { media_buy_ids: [mediaBuyId] })).data.media_buy_deliveries[0].by_package
  svc.clock.advance(10_000)
  t.match(await play(), { tier: 'preferred', creative: { creative_id: idOf('open-pref') } }, 'at 09:00 the preferred package plays ahead of the auction (nothing is booked on gym-1)')
  t.match(await packages(), [{ package_id: 'pkg-0', impressions: 8, spend: 0.1232, rate: 15.4 }, { package_id: 'pkg-1', impressions: 0, spend: 0 }], 'eight viewers at $15.40 CPM')
  await tool(svc, key, 'update_media_buy', { media_buy_id: mediaBuyId, packages: [{ package_id: 'pkg-0', paused: true }] })
  t.match(await play(), { tier: 'house' }, 'the preferred package paused, and the auction package waits for its afternoon daypart')

  svc.clock.advance(4.5 * 3_600_000)
  await sendAudience(svc, partner, [{ device_id: 'gym-1', live_face_count: 8 }])
  t.match(await play(), { tier: 'open_auction', creative: { creative_id: idOf('open-auc') } }, 'at 13:30 the auction package wins the open auction')
  t.match((await packages())[1], { impressions: 8, spend: 0.07208 }, 'alone, it pays the floor ($9 on gym-1) plus $0.01')

  const rival = await svc.onboard('rival_bidder')
  await svc.admin('POST', '/admin/v1/seats/rival_bidder/approve', { reason: 'test' })
  const crid = await approvedCreative(svc, rival.key, 'Rival ad')
  const requests = (await svc.request('GET', '/openrtb/v2/adslots?format=openrtb&limit=10', { key: rival.key })).body.data.bid_requests as any[]
  const imp = requests.find((r) => r.ext.trb.screen_id === screens['gym-1']).imp[0].id
  const placed = await svc.request('POST', '/openrtb/v2/bid', { key: rival.key, body: { id: 'rival-1', seatbid: [{ seat: 'rival_bidder', bid: [{ id: 'rb-1', impid: imp, price: 12, crid, adm: '<div>rival</div>', adomain: ['rival.example'] }] }] } })
  t.equal(placed.body.data.accepted, 1)
  t.match(await play(), { tier: 'open_auction', creative: { creative_id: idOf('open-auc') } }, 'against a $12 bid, the package bidding $20 wins')
  t.match((await packages())[1], { impressions: 16, spend: 0.16816, rate: 10.51 }, 'and pays the runner-up plus $0.01: $12.01 CPM; its rate is what it paid on average')

  const bids: Array<[string, Record<string, unknown>, string]> = [
    ['a bid below the floor', { package_id: 'pkg-1', bid_price: 5 }, 'invalid_parameter'],
    ['a bid on the preferred package', { package_id: 'pkg-0', bid_price: 30 }, 'invalid_parameter']
  ]
  for (const [name, change, code] of bids) t.match(await tool(svc, key, 'update_media_buy', { media_buy_id: mediaBuyId, packages: [change] }), { error: true, data: { errors: [{ code, field: 'packages.0.bid_price' }] } }, name)
  const raised = await tool(svc, key, 'update_media_buy', { media_buy_id: mediaBuyId, packages: [{ package_id: 'pkg-1', bid_price: 25, budget: 0.2 }] })
  t.match(raised.data.affected_packages, [{ package_id: 'pkg-1', bid_price: 25, budget: 0.2 }])
  t.match((await svc.request('GET', '/openrtb/v2/assignments', { key })).body.data.assignments.find((a: { line: string }) => a.line === 'auction'), { cpm: 25 }, 'the placement bids the new price')
  t.match(await play(), { tier: 'house' }, '$0.03 of budget left cannot pay for a play of eight viewers at the floor: the package stops')
  t.equal((await svc.request('GET', '/healthz')).status, 200, 'still serving')
})

t.test('list_creatives: every creative of the seat, however registered, with its moderation and packages; filtered, sorted, paged', async (t) => {
  const svc = await startTestService(t)
  await market(svc)
  const { key } = await svc.onboard('librarian')
  const other = (await svc.onboard('neighbour')).key
  const products = (await tool(svc, key, 'get_products', { brief: 'gyms in Austin' })).data.products
  const buy = await tool(svc, key, 'create_media_buy', { buyer_ref: 'spring', brand: { domain: 'librarian.example' }, start_time: 'asap', end_time: new Date(svc.clock.now() + 7 * DAY).toISOString(), packages: [{ buyer_ref: 'gyms', product_id: products[0].product_id, pricing_option_id: 'cpm_fixed', budget: 500 }] })
  t.equal(buy.error, false, JSON.stringify(buy.data))
  const mediaBuyId = buy.data.media_buy_id as string
  svc.clock.advance(1000)
  const approvedId = await approvedCreative(svc, key, 'Approved through REST')
  svc.clock.advance(1000)
  const waitingId = await unapprovedCreative(svc, key)
  svc.clock.advance(1000)
  const synced = await tool(svc, key, 'sync_creatives', {
    creatives: [{ creative_id: 'lib-a', name: 'Library A', format_id: 'dooh_1920x1080_15s', assets: { primary: { url: 'https://assets.invalid/a.png', format: 'png', width: 1920, height: 1080 } } }],
    assignments: { 'lib-a': [`${mediaBuyId}/pkg-0`] }
  })
  t.equal(synced.error, false)
  svc.clock.advance(1000)
  t.equal((await tool(svc, key, 'sync_creatives', { creatives: [{ creative_id: 'lib-b', name: 'Library B', assets: { primary: { url: 'https://assets.invalid/b.png', format: 'png' } } }] })).error, false)
  await svc.service.moderator.idle()
  await approvedCreative(svc, other, 'Another seat\'s')

  const all = await tool(svc, key, 'list_creatives', { context: { trace: 'l-1' } })
  t.equal(all.error, false)
  t.ok(ListCreativesResponseSchema.safeParse(all.data).success, 'list_creatives answers AdCP\'s schema')
  t.same(all.data.creatives.map((c: { creative_id: string }) => c.creative_id), ['lib-b', 'lib-a', waitingId, approvedId], 'the seat\'s four, newest first, by the buyer\'s creative_id where it synced one; not the other seat\'s')
  t.match(all.data, { query_summary: { total_matching: 4, returned: 4, filters_applied: [], sort_applied: { field: 'created_date', direction: 'desc' } }, pagination: { has_more: false, total_count: 4 }, status_summary: { approved: 1, rejected: 2, processing: 1, pending_review: 0 }, context: { trace: 'l-1' } })
  const [b, a, waiting, approved] = all.data.creatives
  t.match(a, { name: 'Library A', status: 'rejected', format_id: { id: 'dooh', agent_url: `${svc.url}/mcp` }, assignments: { assignment_count: 1, assigned_packages: [{ package_id: 'pkg-0', buyer_ref: 'gyms', assigned_date: String }] }, ext: { oohbid: { platform_id: synced.data.creatives[0].platform_id, moderation_status: 'rejected', rejection_reason: /could not be fetched/ } } }, 'a rejected creative says why, and which package names it')
  t.match(b, { status: 'rejected', assignments: { assignment_count: 0, assigned_packages: [] } })
  t.match(waiting, { status: 'processing', ext: { oohbid: { moderation_status: 'awaiting_upload' } } }, 'an upload not yet made is processing')
  t.match(approved, { status: 'approved', name: 'Approved through REST' })
  t.notOk('rejection_reason' in approved.ext.oohbid)

  const ids = async (args: Record<string, unknown>) => {
    const r = await tool(svc, key, 'list_creatives', args)
    if (r.error) t.fail(JSON.stringify(r.data))
    return r.data.creatives.map((c: { creative_id: string }) => c.creative_id)
  }
  t.same(await ids({ filters: { statuses: ['rejected'] } }), ['lib-b', 'lib-a'])
  t.same(await ids({ filters: { statuses: ['approved', 'processing'] } }), [waitingId, approvedId])
  t.same(await ids({ filters: { name_contains: 'library' } }), ['lib-b', 'lib-a'], 'name_contains ignores case')
  t.same(await ids({ filters: { creative_ids: ['lib-a', approvedId, 'nobody'] } }), ['lib-a', approvedId], 'by the buyer\'s id or the platform\'s')
  t.same(await ids({ filters: { media_buy_ids: [mediaBuyId] } }), ['lib-a'])
  t.same(await ids({ filters: { buyer_refs: ['spring'] } }), ['lib-a'])
  t.same(await ids({ filters: { assigned_to_packages: ['gyms'] } }), ['lib-a'], 'a package by its buyer_ref')
  t.same(await ids({ filters: { unassigned: true, statuses: ['rejected'] } }), ['lib-b'], 'filters combine')
  t.same(await ids({ filters: { format_types: ['video'] } }), [])
  t.same(await ids({ filters: { created_before: all.data.creatives[1].created_date } }), [waitingId, approvedId])
  t.same(await ids({ filters: { created_after: all.data.creatives[1].created_date } }), ['lib-b'], 'the bounds are exclusive')
  t.same(await ids({ sort: { field: 'name', direction: 'asc' } }), [approvedId, 'lib-a', 'lib-b', waitingId], 'by name: Approved, Library A, Library B, Not yet')
  t.equal((await ids({ sort: { field: 'assignment_count' } }))[0], 'lib-a', 'the assigned one first')
  t.equal((await ids({ sort: { field: 'assignment_count', direction: 'asc' } }))[3], 'lib-a', 'and last, ascending')
  t.same((await ids({ sort: { field: 'created_date', direction: 'asc' } })).slice(0, 2), [approvedId, waitingId], 'oldest first')

  const pages: string[] = []
  let cursor: string | undefined
  for (let i = 0; i < 5; i++) {
    const r = await tool(svc, key, 'list_creatives', { pagination: { max_results: 3, ...(cursor !== undefined ? { cursor } : {}) } })
    pages.push(...r.data.creatives.map((c: { creative_id: string }) => c.creative_id))
    if (i === 0) {
      t.match(r.data.pagination, { has_more: true, total_count: 4, cursor: String })
      // A creative synced between pages is newer than the cursor: the next page neither repeats nor skips one.
      svc.clock.advance(1000)
      await tool(svc, key, 'sync_creatives', { creatives: [{ creative_id: 'lib-c', name: 'Library C', assets: { primary: { url: 'https://assets.invalid/c.png', format: 'png' } } }] })
    }
    cursor = r.data.pagination.cursor
    if (r.data.pagination.has_more !== true) break
  }
  t.same(pages, ['lib-b', 'lib-a', waitingId, approvedId], 'three, then the last one, whatever was synced meanwhile')

  const before = svc.snapshot()
  t.match(await tool(svc, key, 'list_creatives', { pagination: { cursor: 'not-a-cursor' } }), { error: true, data: { errors: [{ code: 'invalid_parameter', field: 'pagination.cursor' }] } })
  t.match(await tool(svc, key, 'list_creatives', { filters: { statuses: ['lost'] } }), { error: true, data: { errors: [{ message: /statuses/ }] } })
  t.match(await tool(svc, key, 'list_creatives', { filters: { created_after: 'yesterday' } }), { error: true, data: { errors: [{ field: 'filters.created_after' }] } })
  t.match(await tool(svc, key, 'list_creatives', { pagination: { max_results: 0 } }), { error: true })
  t.match(await tool(svc, key, 'list_creatives', { account: { account_id: 'neighbour' } }), { error: true, data: { errors: [{ code: 'not_authorized' }] } })
  t.same({ ...svc.snapshot(), outbox: 0, audit: 0 }, { ...before, outbox: 0, audit: 0 }, 'refusals write nothing but the audit trail')
  t.equal((await svc.request('GET', '/healthz')).status, 200, 'still serving')
})

t.test('provide_performance_feedback: kept with the buy, shown in its delivery, and ranking that buyer\'s products', async (t) => {
  const svc = await startTestService(t)
  await market(svc)
  const { key } = await svc.onboard('rater')
  const neighbour = (await svc.onboard('unrated')).key
  const austin = (await tool(svc, key, 'get_products', { brief: 'gyms in Austin' })).data.products
  const buy = await tool(svc, key, 'create_media_buy', { buyer_ref: 'rated', start_time: 'asap', end_time: new Date(svc.clock.now() + 7 * DAY).toISOString(), packages: [{ buyer_ref: 'austin-gyms', product_id: austin[0].product_id, pricing_option_id: 'cpm_fixed', budget: 500 }] })
  t.equal(buy.error, false, JSON.stringify(buy.data))
  const mediaBuyId = buy.data.media_buy_id as string
  /** The venue types of the wholesale catalog's segments in the order get_products lists them, and their ratings. */
  const segments = async (k = key) => {
    const products = (await tool(svc, k, 'get_products', { buying_mode: 'wholesale' })).data.products as Array<{ product_id: string, ext: { oohbid: { venue_type: string, buyer_performance_index?: number } } }>
    return [...new Map(products.map((p) => [p.ext.oohbid.venue_type, p.ext.oohbid.buyer_performance_index])).entries()]
  }
  const unrated = await segments()
  t.same(unrated.map(([venue]) => venue).sort(), ['airport', 'gym'])
  t.ok(unrated.every(([, index]) => index === undefined), 'nothing rated yet')
  svc.clock.advance(DAY)
  const period = { start: new Date(svc.clock.now() - DAY).toISOString(), end: new Date(svc.clock.now() - 1000).toISOString() }
  const poor = await tool(svc, key, 'provide_performance_feedback', { media_buy_id: mediaBuyId, measurement_period: period, performance_index: 0.5, metric_type: 'brand_lift', feedback_source: 'third_party_measurement', context: { trace: 'f-1' } })
  t.equal(poor.error, false, JSON.stringify(poor.data))
  t.ok(ProvidePerformanceFeedbackResponseSchema.safeParse(poor.data).success, 'answers AdCP\'s schema')
  t.match(poor.data, { success: true, context: { trace: 'f-1' } })
  t.same(await segments(), [['airport', undefined], ['gym', 0.5]], 'gyms, rated 0.5 by this buyer (Austin gyms tell about US gyms), come after the airport it did not rate')
  const good = await tool(svc, key, 'provide_performance_feedback', { buyer_ref: 'rated', package_id: 'austin-gyms', measurement_period: period, performance_index: 1.9, creative_id: 'spot-1' })
  t.equal(good.error, false, JSON.stringify(good.data))
  t.same(await segments(), [['gym', 1.2], ['airport', undefined]], 'a package rated 1.9 beside it: the mean, 1.2, puts gyms first')
  t.same(await segments(neighbour), unrated, 'another buyer\'s catalog is not moved by this buyer\'s ratings')
  const delivery = await tool(svc, key, 'get_media_buy_delivery', { media_buy_ids: [mediaBuyId] })
  t.match(delivery.data.media_buy_deliveries[0].by_package[0].ext.oohbid.performance_feedback, { performance_index: 1.9, metric_type: 'overall_performance', feedback_source: 'buyer_attribution', measurement_period: period, creative_id: 'spot-1', ratings: 2 }, 'the package\'s delivery shows its latest rating and how many it has')

  const before = svc.snapshot()
  const refusals: Array<[string, Record<string, unknown>, string | RegExp, string | undefined]> = [
    ['a period that ends before it starts', { media_buy_id: mediaBuyId, measurement_period: { start: period.end, end: period.start }, performance_index: 1 }, 'invalid_parameter', 'measurement_period.end'],
    ['a period not over yet', { media_buy_id: mediaBuyId, measurement_period: { start: period.start, end: new Date(svc.clock.now() + DAY).toISOString() }, performance_index: 1 }, 'invalid_parameter', 'measurement_period.end'],
    ['a start that is no date', { media_buy_id: mediaBuyId, measurement_period: { start: 'monday', end: period.end }, performance_index: 1 }, 'invalid_parameter', 'measurement_period.start'],
    ['a package the buy does not have', { media_buy_id: mediaBuyId, package_id: 'pkg-9', measurement_period: period, performance_index: 1 }, 'package_not_found', 'package_id'],
    ['no media buy named', { measurement_period: period, performance_index: 1 }, 'invalid_parameter', 'media_buy_id'],
    ['an unknown media buy', { media_buy_id: 'mb_nope', measurement_period: period, performance_index: 1 }, 'media_buy_not_found', 'media_buy_id'],
    ['a negative index', { media_buy_id: mediaBuyId, measurement_period: period, performance_index: -1 }, /./, undefined],
    ['no index', { media_buy_id: mediaBuyId, measurement_period: period }, /./, undefined],
    ['a metric AdCP does not name', { media_buy_id: mediaBuyId, measurement_period: period, performance_index: 1, metric_type: 'vibes' }, /./, undefined]
  ]
  for (const [name, args, code, field] of refusals) {
    const r = await tool(svc, key, 'provide_performance_feedback', args)
    t.equal(r.error, true, name)
    t.match(r.data.errors?.[0], { code, ...(field !== undefined ? { field } : {}) }, name)
  }
  t.match(await tool(svc, neighbour, 'provide_performance_feedback', { media_buy_id: mediaBuyId, measurement_period: period, performance_index: 0 }), { error: true, data: { errors: [{ code: 'media_buy_not_found' }] } }, 'another seat cannot rate this buyer\'s buy')
  t.same({ ...svc.snapshot(), outbox: 0, audit: 0 }, { ...before, outbox: 0, audit: 0 }, 'refusals write nothing but the audit trail')
  t.equal((await svc.request('GET', '/healthz')).status, 200, 'still serving')
})

t.test('sync_audiences is refused, saying why and what to target instead; nothing is kept', async (t) => {
  const svc = await startTestService(t)
  const { key } = await svc.onboard('crm_buyer')
  const before = svc.snapshot()
  const r = await tool(svc, key, 'sync_audiences', { audiences: [{ audience_id: 'loyal', add: [{ hashed_email: 'a'.repeat(64) }] }], context: { trace: 'a-1' } })
  t.equal(r.error, true)
  t.match(r.data, { errors: [{ code: 'unsupported_feature', field: 'audiences', message: /never identified.*venue types/s }], context: { trace: 'a-1' } })
  t.match(await tool(svc, key, 'sync_audiences', { account: { account_id: 'someone_else' } }), { error: true, data: { errors: [{ code: 'not_authorized' }] } }, 'another account is refused first, as everywhere')
  t.same({ ...svc.snapshot(), outbox: 0, audit: 0 }, { ...before, outbox: 0, audit: 0 }, 'nothing kept')
  const caps = await tool(svc, key, 'get_adcp_capabilities', {})
  t.equal(caps.data.media_buy.features.audience_targeting, false, 'and the capabilities say so')
})

t.test('FEIN as AdCP signals: found in words, activated, and a package targeting one plays on a screen only while its live audience is in it', async (t) => {
  const svc = await startTestService(t, { PICKUP_SECONDS: '5' })
  // Monday 09:00 in Austin: the gyms are open.
  svc.clock.set(Date.UTC(2026, 10, 30, 15, 0, 0))
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
  const svc = await startTestService(t, { ALLOW_PRIVATE_CALLBACK_URLS: 'true' })
  // Monday 09:00 in Austin: the gyms are open.
  svc.clock.set(Date.UTC(2026, 10, 30, 15, 0, 0))
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
  for (let i = 0; i < 50 && rx.received.length < 3; i++) await new Promise((resolve) => setTimeout(resolve, 100))
  t.same(rx.received.map((r) => [r.path, r.query.get('bid'), r.query.get('code')]).sort(), [['/loss', 'b-0', '3'], ['/loss', 'b-1', '1000'], ['/win', 'b-2', null]], 'gym-1\'s bid loses with code 1000 (live audience not in its segment); gym-2\'s wins; the refused bid had its lurl at intake (3, invalid bid response)')
  t.equal((await svc.request('GET', '/healthz')).status, 200, 'still serving')
})

t.test('reporting webhooks: a media buy\'s delivery sent at its cadence, signed with the buyer\'s credentials, until a final report', async (t) => {
  const svc = await startTestService(t, { PICKUP_SECONDS: '5', ALLOW_PRIVATE_CALLBACK_URLS: 'true' })
  // Monday 09:00 in Austin (15:00 UTC): the gyms are open.
  svc.clock.set(Date.UTC(2026, 10, 30, 15, 0, 0))
  const { embedOf, screens } = await market(svc)
  const rx = await startReceiver(t, true)
  const { key } = await svc.onboard('reporting_buyer')
  const credentials = 'c'.repeat(16) + 'r'.repeat(16) + '-secret'
  const preferred = await gymProduct(svc, key, 'preferred')
  const hook = { url: `${rx.url}/reports`, token: 'tok-1', authentication: { schemes: ['HMAC-SHA256'], credentials }, reporting_frequency: 'hourly' }
  const request = (reporting: Record<string, unknown>) => ({ buyer_ref: 'reported', start_time: 'asap', end_time: new Date(Date.UTC(2026, 10, 30, 17, 30)).toISOString(), reporting_webhook: reporting, packages: [{ product_id: preferred, pricing_option_id: 'cpm_fixed', budget: 100, pacing: 'asap', creatives: [{ creative_id: 'reported-ad', name: 'Reported ad', assets: { primary: { url: 'https://assets.invalid/reported.png' } } }] }] })

  const before = svc.snapshot()
  t.match(await tool(svc, key, 'create_media_buy', request({ ...hook, url: `http://127.0.0.1:${new URL(rx.url).port}/reports` })), { error: true, data: { errors: [{ code: 'invalid_parameter', field: 'reporting_webhook.url', message: /https/ }] } }, 'https only')
  t.match(await tool(svc, key, 'create_media_buy', request({ ...hook, authentication: { schemes: ['HMAC-SHA256'], credentials: 'short' } })), { error: true, data: { errors: [{ field: 'reporting_webhook.authentication.credentials' }] } }, 'credentials of at least 32 characters')
  t.match(await tool(svc, key, 'create_media_buy', request({ ...hook, reporting_frequency: 'weekly' })), { error: true, data: { errors: [{ field: 'reporting_webhook.reporting_frequency' }] } })
  t.same({ ...svc.snapshot(), outbox: 0, audit: 0 }, { ...before, outbox: 0, audit: 0 }, 'refusals write nothing')

  const made = await tool(svc, key, 'create_media_buy', request(hook))
  t.equal(made.error, false, JSON.stringify(made.data))
  t.match(await tool(svc, key, 'update_media_buy', { media_buy_id: made.data.media_buy_id, reporting_webhook: { ...hook, url: 'ftp://reports.example/in' } }), { error: true, data: { errors: [{ code: 'invalid_parameter', field: 'reporting_webhook.url' }] } }, 'update_media_buy checks a new webhook the same way')
  await approveSynced(svc, key)
  svc.clock.advance(10_000)
  const embed = embedOf(screens['gym-1']!)
  for (let i = 0; i < 3; i++) {
    const spot = (await svc.request('POST', `${embed}/spots`, { body: {} })).body.data
    await svc.request('POST', `${embed}/spots/${spot.spot_id as string}/events`, { body: { event: 'render_started' } })
    await svc.request('POST', `${embed}/spots/${spot.spot_id as string}/events`, { body: { event: 'play_completed', duration_ms: 15_000 } })
  }

  /** The reports received once the jobs ran at a time, waiting for the sender. */
  const reportsAt = async (ms: number, count: number) => {
    svc.clock.set(ms)
    await svc.service.runJobs()
    for (let i = 0; i < 100 && rx.received.length < count; i++) await new Promise((resolve) => setTimeout(resolve, 50))
    return rx.received.map((r) => JSON.parse(r.body))
  }
  t.equal((await reportsAt(Date.UTC(2026, 10, 30, 15, 59, 59), 0)).length, 0, 'nothing before the hour')
  const [first] = await reportsAt(Date.UTC(2026, 10, 30, 16, 0, 1), 1)
  t.ok(GetMediaBuyDeliveryResponseSchema.safeParse(first).success, 'a report is AdCP\'s get_media_buy_delivery answer')
  t.match(first, { notification_type: 'scheduled', sequence_number: 1, next_expected_at: '2026-11-30T17:00:00.000Z', token: 'tok-1', reporting_period: { end: '2026-11-30T16:00:00.000Z' }, media_buy_deliveries: [{ media_buy_id: made.data.media_buy_id, by_package: [{ package_id: 'pkg-0' }] }] })
  t.ok(first.media_buy_deliveries[0].totals.impressions > 0, `with what it delivered (${first.media_buy_deliveries[0].totals.impressions as number} impressions, $${first.media_buy_deliveries[0].totals.spend as number})`)
  const got = rx.received[0]!
  const signature = Object.fromEntries(String(got.headers['x-service-signature']).split(',').map((p) => p.split('=') as [string, string]))
  t.equal(got.headers['x-service-event'], 'media_buy.delivery_report')
  t.equal(signature.v1, createHmac('sha256', credentials).update(`${got.headers['x-service-timestamp'] as string}.${got.body}`).digest('hex'), 'signed with the buyer\'s credentials over "<t>.<body>"')
  t.equal(signature.v0, createHmac('sha256', credentials).update(`${got.headers['x-service-timestamp'] as string}.${got.headers['x-service-delivery-id'] as string}.${got.body}`).digest('hex'), 'v0 binds the delivery id too')
  t.match((await reportsAt(Date.UTC(2026, 10, 30, 17, 0, 1), 2))[1], { notification_type: 'scheduled', sequence_number: 2, next_expected_at: '2026-11-30T17:30:00.000Z' }, 'the next hour; the next is the flight\'s end')
  const last = (await reportsAt(Date.UTC(2026, 10, 30, 17, 30, 1), 3))[2]
  t.match(last, { notification_type: 'final', sequence_number: 3, reporting_period: { end: '2026-11-30T17:30:00.000Z' } }, 'a final report at the end')
  t.notOk('next_expected_at' in last)
  t.equal((await reportsAt(Date.UTC(2026, 10, 30, 19, 0, 1), 4)).length, 3, 'and nothing after it')
  t.equal((await svc.request('GET', '/healthz')).status, 200, 'still serving')
})

t.test('guaranteed packages with dayparts book each hour\'s spots: an hour without the room is refused, and the placement plays in its hours', async (t) => {
  const svc = await startTestService(t, { PICKUP_SECONDS: '5' })
  // Monday 09:00 in Austin (15:00 UTC). Two-minute slots: each screen plays 30 spots an hour.
  svc.clock.set(Date.UTC(2026, 10, 30, 15, 0, 0))
  const partner = await registerPartner(svc)
  await registerDevices(svc, partner, ['slow-1', 'slow-2'].map((id) => deviceBody(id, { floor_price_cpm: 10, slot_duration_seconds: 120 })))
  await sendAudience(svc, partner, ['slow-1', 'slow-2'].map((id) => ({ device_id: id, live_face_count: 8, attention_score: 0.6 })))
  const devices = (await svc.request('GET', '/v1/partner/devices', { key: partner.key })).body.data.devices as Array<{ device_id: string, embed_url: string }>
  const embed = new URL(devices.find((d) => d.device_id === 'slow-1')!.embed_url).pathname
  const { key } = await svc.onboard('evening_buyer')
  const guaranteed = await gymProduct(svc, key, 'guaranteed')
  const evenings = (start: number, end: number) => ({ daypart_targets: [{ days: ['monday'], start_hour: start, end_hour: end }] })
  // $12 CPM (1.2x the floor), 8 people a play, 2 screens, the 2 Mondays of the flight: $15.36 buys 40 spots a Monday on each.
  const buy = async (ref: string, budget: number, overlay?: Record<string, unknown>) => await tool(svc, key, 'create_media_buy', { buyer_ref: ref, start_time: 'asap', end_time: new Date(svc.clock.now() + 7 * DAY).toISOString(), packages: [{ product_id: guaranteed, pricing_option_id: 'cpm_fixed', budget, ...(overlay !== undefined ? { targeting_overlay: overlay } : {}), creatives: [{ creative_id: `${ref}-ad`, name: ref, assets: { primary: { url: `https://assets.invalid/${ref}.png` } } }] }] })

  const early = await buy('early-evening', 15.36, evenings(17, 19))
  t.equal(early.error, false, JSON.stringify(early.data))
  t.match(early.data.packages[0], { targeting_overlay: { daypart_targets: [{ days: ['monday'], start_hour: 17, end_hour: 19 }] }, ext: { oohbid: { spots_per_day: 40 } } }, '40 spots a Monday: 20 in each of its two hours')
  const before = svc.snapshot()
  t.match(await buy('late-evening', 4.608, evenings(18, 19)), { error: true, data: { errors: [{ code: 'capacity_unavailable', message: /10 free spots from 18:00 to 19:00 on 2026-11-30; 12 were asked/ }] } }, '12 more from 18:00 do not fit the 10 that hour has left')
  t.same({ ...svc.snapshot(), outbox: 0, audit: 0 }, { ...before, outbox: 0, audit: 0 }, 'and nothing is booked')
  t.equal((await buy('late-fits', 3.84, evenings(18, 19))).error, false, '10 fit')
  t.match(await buy('late-full', 1.6, evenings(18, 19)), { error: true, data: { errors: [{ code: 'capacity_unavailable', message: /0 free spots from 18:00/ }] } }, 'the hour is full now')
  t.equal((await buy('all-day', 153.6)).error, false, 'a whole-day line still fits the day around them')
  t.match(await tool(svc, key, 'update_media_buy', { media_buy_id: early.data.media_buy_id, packages: [{ package_id: 'pkg-0', targeting_overlay: evenings(19, 21) }] }), { error: true, data: { errors: [{ code: 'validation_failed', field: 'packages.0.targeting_overlay.daypart_targets' }] } }, 'a guaranteed package keeps the hours it booked')

  const [earlyAd] = await approveSynced(svc, key, ['early-evening-ad'])
  svc.clock.advance(10_000)
  t.not((await svc.request('POST', `${embed}/spots`, { body: {} })).body.data.creative?.creative_id, earlyAd, 'at 09:00 the evening line does not play')
  svc.clock.set(Date.UTC(2026, 10, 30, 23, 0, 30))
  t.match((await svc.request('POST', `${embed}/spots`, { body: {} })).body.data, { tier: 'guaranteed', creative: { creative_id: earlyAd } }, 'at 17:00 it is behind its pace and plays')
  t.equal((await svc.request('GET', '/healthz')).status, 200, 'still serving')
})

t.test('a media buy plays from its start_time to its end_time on every screen, whatever the screen\'s local date', async (t) => {
  const svc = await startTestService(t, { PICKUP_SECONDS: '5' })
  // 02:00 UTC on December 1st is still Monday, November 30th, 20:00 in Austin.
  svc.clock.set(Date.UTC(2026, 11, 1, 2, 0, 0))
  const { embedOf, screens } = await market(svc)
  const { key } = await svc.onboard('late_buyer')
  const preferred = await gymProduct(svc, key, 'preferred')
  const made = await tool(svc, key, 'create_media_buy', { buyer_ref: 'late', start_time: 'asap', end_time: new Date(Date.UTC(2026, 11, 1, 3, 0, 0)).toISOString(), packages: [{ product_id: preferred, pricing_option_id: 'cpm_fixed', budget: 50, pacing: 'asap', creatives: [{ creative_id: 'late-ad', name: 'Late ad', assets: { primary: { url: 'https://assets.invalid/late.png' } } }] }] })
  t.equal(made.error, false, JSON.stringify(made.data))
  const [creative] = await approveSynced(svc, key)
  t.match((await svc.request('GET', '/openrtb/v2/assignments', { key })).body.data.assignments, [{ start_date: '2026-12-01', effective_at: String, ends_at: '2026-12-01T03:00:00.000Z' }], 'the placement starts on UTC\'s December 1st and ends at the buy\'s end_time')
  svc.clock.advance(10_000)
  const embed = embedOf(screens['gym-1']!)
  t.match((await svc.request('POST', `${embed}/spots`, { body: {} })).body.data, { tier: 'preferred', creative: { creative_id: creative } }, 'it plays in Austin at once, where it is still November 30th')
  svc.clock.set(Date.UTC(2026, 11, 1, 3, 0, 1))
  t.not((await svc.request('POST', `${embed}/spots`, { body: {} })).body.data.creative?.creative_id, creative, 'and stops at its end_time, before Austin\'s day ends')
})

t.test('inline creatives rotate by weight on the screens; a creative_id synced with a new asset is a new version, moderated again while the approved one plays', async (t) => {
  const svc = await startTestService(t, { PICKUP_SECONDS: '5' })
  // Monday 09:00 in Austin: the gyms are open.
  svc.clock.set(Date.UTC(2026, 10, 30, 15, 0, 0))
  const { embedOf, screens } = await market(svc)
  const { key } = await svc.onboard('rotation_buyer')
  const preferred = await gymProduct(svc, key, 'preferred')
  const pkg = (creatives: unknown[]) => ({ buyer_ref: 'rotating', product_id: preferred, pricing_option_id: 'cpm_fixed', budget: 2000, pacing: 'asap', creatives })
  const spotA = { name: 'Spot A', format_id: 'dooh_1920x1080_15s', assets: { primary: { url: 'https://assets.invalid/a.png' } }, weight: 3 }
  const spotB = { creative_id: 'spot-b', name: 'Spot B', assets: { primary: { url: 'https://assets.invalid/b.png' } } }
  const flight = { start_time: 'asap', end_time: new Date(svc.clock.now() + 7 * DAY).toISOString() }

  const before = svc.snapshot()
  t.match(await tool(svc, key, 'create_media_buy', { buyer_ref: 'bad', ...flight, packages: [pkg([spotA, { ...spotB, assets: { primary: { url: 'ftp://assets.invalid/b.png' } } }])] }), { error: true, data: { errors: [{ code: 'invalid_parameter', field: 'packages.0.creatives.1' }] } }, 'one bad inline creative refuses the buy')
  t.match(await tool(svc, key, 'create_media_buy', { buyer_ref: 'bad', ...flight, packages: [{ ...pkg([spotA]), creative_assignments: [{ creative_id: 'spot-b', weight: -1 }] }] }), { error: true, data: { errors: [{ field: 'packages.0.creative_assignments.0.weight' }] } }, 'a negative weight')
  t.match(await tool(svc, key, 'sync_creatives', { creatives: [{ name: 'No id', assets: { primary: { url: 'https://assets.invalid/c.png' } } }] }), { error: true, data: { errors: [{ code: 'missing_required_field', field: 'creatives.0.creative_id' }] } }, 'sync_creatives needs the buyer\'s creative_id; only inline creatives may go without')
  t.same({ ...svc.snapshot(), outbox: 0, audit: 0 }, { ...before, outbox: 0, audit: 0 }, 'refusals write nothing')

  const made = await tool(svc, key, 'create_media_buy', { buyer_ref: 'rotation', ...flight, packages: [pkg([spotA, spotB])] })
  t.equal(made.error, false, JSON.stringify(made.data))
  const inlineId = made.data.packages[0].creative_assignments[0].creative_id as string
  t.match(made.data.packages[0].creative_assignments, [{ creative_id: /^inline_[0-9a-f]{16}$/, weight: 3 }, { creative_id: 'spot-b', weight: 1 }], 'an inline creative without an id gets one; B takes the default weight')
  const later = { start_time: new Date(svc.clock.now() + 2 * DAY).toISOString(), end_time: flight.end_time }
  t.same((await tool(svc, key, 'create_media_buy', { buyer_ref: 'rotation-later', ...later, packages: [pkg([spotA])] })).data.packages[0].creative_assignments, [{ creative_id: inlineId, weight: 3 }], 'the same inline creative in another buy is the same creative')
  t.equal((await tool(svc, key, 'list_creatives', {})).data.creatives.length, 2, 'two creatives registered, not three')
  t.equal(made.data.status, 'pending_activation', 'the buy waits for moderation')

  // The assets cannot be fetched, so moderation rejects both at once; the operator overturns that.
  await approveSynced(svc, key)
  const placement = (await svc.request('GET', '/openrtb/v2/assignments', { key })).body.data.assignments.find((a: { line: string, rotation?: unknown[] }) => a.line === 'preferred' && a.rotation?.length === 2)
  t.ok(placement !== undefined, 'the placement rotates between the two')
  svc.clock.advance(10_000)
  const [idA, idB] = (placement.rotation as Array<{ creative_id: string }>).map((r) => r.creative_id)
  /** Which creative each of n spots at gym-1 plays. */
  const plays = async (n: number) => {
    const got: string[] = []
    for (let i = 0; i < n; i++) got.push((await svc.request('POST', `${embedOf(screens['gym-1']!)}/spots`, { body: {} })).body.data.creative?.creative_id)
    return got
  }
  const first = await plays(40)
  const count = (ids: string[], id: string | undefined) => ids.filter((x) => x === id).length
  t.same([count(first, idA), count(first, idB)], [31, 9], '40 spots at 3:1: A plays 31, B 9')
  t.ok(first.slice(0, 8).includes(idB!), 'interleaved: B plays within the first eight spots')

  const resynced = await tool(svc, key, 'sync_creatives', { creatives: [{ ...spotB, assets: { primary: { url: 'https://assets.invalid/b-v2.png' } } }] })
  t.match(resynced.data.creatives, [{ creative_id: 'spot-b', action: 'updated', status: 'pending_review', warnings: [/Version 2 .* version 1 plays until it is approved/] }], 'the new asset is version 2, sent to moderation')
  const v2 = resynced.data.creatives[0].platform_id as string
  t.not(v2, idB, 'a creative of its own')
  await svc.service.moderator.idle()
  const listed = (await tool(svc, key, 'list_creatives', { filters: { creative_ids: ['spot-b'] } })).data.creatives
  t.match(listed, [{ creative_id: 'spot-b', status: 'rejected', ext: { oohbid: { platform_id: v2, version: 2, playing_version: 1, playing_platform_id: idB } } }], 'listed once, as version 2: moderation turned it down and version 1 plays on')
  t.same(count(await plays(8), idB), 2, 'version 1 keeps its share')
  t.equal((await tool(svc, key, 'sync_creatives', { creatives: [{ ...spotB, assets: { primary: { url: 'https://assets.invalid/b-v2.png' } } }] })).data.creatives[0].action, 'unchanged', 'the same asset again changes nothing')
  await svc.admin('POST', `/admin/v1/creatives/${v2}/review`, { decision: 'approved', reason: 'checked for the test' })
  const after = await plays(8)
  t.same([count(after, v2) + count(after, idA), count(after, idB)], [8, 0], 'approved: version 1 plays no more')
  t.ok(count(after, v2) > 0, `version 2 plays in its place (${count(after, v2)} of 8 spots)`)
  t.notOk('playing_version' in (await tool(svc, key, 'list_creatives', { filters: { creative_ids: ['spot-b'] } })).data.creatives[0].ext.oohbid)

  const reweighted = await tool(svc, key, 'update_media_buy', { media_buy_id: made.data.media_buy_id, packages: [{ package_id: 'pkg-0', creative_assignments: [{ creative_id: inlineId, weight: 0 }, { creative_id: 'spot-b', weight: 1 }] }] })
  t.match(reweighted.data.affected_packages, [{ creative_assignments: [{ creative_id: inlineId, weight: 0 }, { creative_id: 'spot-b', weight: 1 }] }])
  t.same(count(await plays(10), v2), 10, 'A at weight 0 stays attached and stops playing: B plays every spot')
  t.equal((await svc.request('GET', '/healthz')).status, 200, 'still serving')
})

t.test('property lists: kept per seat, resolved to screens, narrowing products and packages; shared by auth_token; refused inputs write nothing', async (t) => {
  const svc = await startTestService(t)
  const { partner, screens } = await market(svc)
  const { key } = await svc.onboard('list_owner')
  const { key: other } = await svc.onboard('list_guest')
  const agentUrl = `${svc.url}/mcp`
  const domain = `${partner.slug}.example`

  const before = svc.snapshot()
  t.match(await tool(svc, key, 'create_property_list', { description: 'no name' }), { error: true, data: { errors: [{ code: 'missing_required_field', field: 'name' }] } })
  t.match(await tool(svc, key, 'create_property_list', { name: 'x', base_properties: [{ selection_type: 'by_magic' }] }), { error: true, data: { errors: [{ field: /^base_properties/ }] } }, 'an unknown selection_type')
  t.match(await tool(svc, key, 'get_property_list', { list_id: 'pl_nope' }), { error: true, data: { errors: [{ code: 'property_list_not_found', field: 'list_id' }] } })
  t.match(await tool(svc, key, 'get_products', { brief: 'gyms in Austin', property_list: { agent_url: 'https://governance.example/mcp', list_id: 'pl_1' } }), { error: true, data: { errors: [{ code: 'unsupported_feature', field: 'property_list.agent_url' }] } }, 'another agent\'s list is not fetched')
  t.same({ ...svc.snapshot(), outbox: 0, audit: 0 }, { ...before, outbox: 0, audit: 0 }, 'refusals write nothing')

  // Austin's screens with a floor of $11 or more (gym-3 to gym-6 and the airport), gym-4 kept out by its operator's id; a web filter kept as given.
  const made = await tool(svc, key, 'create_property_list', {
    name: 'Premium Austin gyms',
    base_properties: [{ selection_type: 'publisher_tags', publisher_domain: domain, tags: ['austin'] }],
    filters: { countries_all: ['US'], exclude_identifiers: [{ type: 'venue_id', value: 'gym-4' }], feature_requirements: [{ feature_id: 'floor_cpm', min_value: 11 }], garm_categories: { exclude: ['adult'] } },
    brand: { domain: 'acme.example' },
    context: { trace: 'pl-1' }
  })
  t.equal(made.error, false, JSON.stringify(made.data))
  t.ok(CreatePropertyListResponseSchema.safeParse(made.data).success, 'create_property_list answers AdCP\'s schema')
  const listId = made.data.list.list_id as string
  t.match(made.data, { list: { list_id: /^pl_/, name: 'Premium Austin gyms', principal: 'list_owner' }, auth_token: /^plt_/, context: { trace: 'pl-1' } })
  const ref = { agent_url: agentUrl, list_id: listId }

  const resolved = await tool(svc, key, 'get_property_list', { list_id: listId, pagination: { max_results: 2 } })
  t.ok(GetPropertyListResponseSchema.safeParse(resolved.data).success, 'get_property_list answers AdCP\'s schema')
  const gyms = ['gym-3', 'gym-5', 'gym-6'].map((d) => screens[d]!).sort()
  const kept = [...gyms, screens['airport-1']!].sort()
  t.match(resolved.data, { list: { property_count: 4, filters: { garm_categories: { exclude: ['adult'] } } }, pagination: { has_more: true, total_count: 4, cursor: String }, ext: { oohbid: { filters_not_applied: ['garm_categories'] } } })
  const rest = await tool(svc, key, 'get_property_list', { list_id: listId, pagination: { max_results: 2, cursor: resolved.data.pagination.cursor } })
  t.same([...resolved.data.identifiers, ...rest.data.identifiers], kept.map((id) => ({ type: 'screen_id', value: id })), 'two pages: the four screens it keeps, by screen_id')
  t.equal(rest.data.pagination.has_more, false)
  const gaps = await tool(svc, key, 'create_property_list', { name: 'With gaps', base_properties: [{ selection_type: 'identifiers', identifiers: [{ type: 'screen_id', value: screens['airport-1'] }, { type: 'domain', value: 'example.com' }, { type: 'ios_bundle', value: 'com.example' }] }] })
  t.match((await tool(svc, key, 'get_property_list', { list_id: gaps.data.list.list_id })).data, { list: { property_count: 1 }, coverage_gaps: { domain: [{ value: 'example.com' }], ios_bundle: [{ value: 'com.example' }] } }, 'identifiers naming no screen here are coverage gaps')
  const legacy = await tool(svc, key, 'create_property_list', { name: 'AdCP 2 form', base_properties: { include: [{ identifier_type: 'openooh_venue_type', identifier_value: 'gym' }], exclude: [{ identifier_type: 'venue_id', identifier_value: 'gym-dallas' }] } })
  t.match(legacy.data.list, { base_properties: [{ selection_type: 'identifiers', identifiers: [{ type: 'openooh_venue_type', value: 'gym' }] }], filters: { exclude_identifiers: [{ type: 'venue_id', value: 'gym-dallas' }] } }, 'AdCP 2\'s {include, exclude} read as a source and exclusions')
  t.equal((await tool(svc, key, 'get_property_list', { list_id: legacy.data.list.list_id, resolve: true })).data.list.property_count, 6, 'every gym but Dallas\'s')

  const products = async (k: string, list?: Record<string, unknown>) => (await tool(svc, k, 'get_products', { brief: 'gyms in Austin', ...(list !== undefined ? { property_list: list } : {}) })).data
  t.same((await products(key)).products.map((p: { ext: { oohbid: { screens: number } } }) => p.ext.oohbid.screens), [6, 6, 6])
  const narrowed = await products(key, ref)
  t.same(narrowed.products.map((p: { ext: { oohbid: { screens: number } } }) => p.ext.oohbid.screens), [3, 3, 3], 'with the list each product shows only its three screens')
  t.equal(narrowed.property_list_applied, true)
  t.same(narrowed.products[0].publisher_properties[0].property_ids.sort(), gyms)

  const buy = async (k: string, overlay: Record<string, unknown>, product = narrowed.products[1].product_id) => await tool(svc, k, 'create_media_buy', { buyer_ref: `listed-${Math.random()}`, start_time: 'asap', end_time: new Date(svc.clock.now() + 7 * DAY).toISOString(), packages: [{ product_id: product, pricing_option_id: 'cpm_fixed', budget: 500, targeting_overlay: overlay }] })
  const bought = await buy(key, { property_list: ref })
  t.equal(bought.error, false, JSON.stringify(bought.data))
  t.match(bought.data.packages[0], { targeting_overlay: { property_list: ref }, ext: { oohbid: { screens: 3 } } }, 'the package plays only on the list\'s screens')
  const none = await tool(svc, key, 'create_property_list', { name: 'Airports only', base_properties: [{ selection_type: 'identifiers', identifiers: [{ type: 'openooh_venue_type', value: 'airport' }] }] })
  const mid = svc.snapshot()
  t.match(await buy(key, { property_list: { agent_url: agentUrl, list_id: none.data.list.list_id } }), { error: true, data: { errors: [{ code: 'validation_failed', field: 'packages.0.targeting_overlay.property_list' }] } }, 'a list that keeps none of the product\'s screens')
  t.same({ ...svc.snapshot(), outbox: 0, audit: 0 }, { ...mid, outbox: 0, audit: 0 }, 'and nothing is bought')

  // Another seat uses the list only with its auth_token, and cannot change it.
  t.match(await tool(svc, other, 'get_property_list', { list_id: listId }), { error: true, data: { errors: [{ code: 'property_list_not_found' }] } }, 'another seat\'s list without its token')
  t.equal((await tool(svc, other, 'get_property_list', { list_id: listId, auth_token: made.data.auth_token })).data.list.property_count, 4, 'shared by its token')
  t.same((await products(other, { ...ref, auth_token: made.data.auth_token })).products.map((p: { ext: { oohbid: { screens: number } } }) => p.ext.oohbid.screens), [3, 3, 3], 'and used in get_products')
  t.match(await tool(svc, other, 'update_property_list', { list_id: listId, auth_token: made.data.auth_token, name: 'mine now' }), { error: true, data: { errors: [{ code: 'not_authorized' }] } }, 'but not changed')
  t.match(await tool(svc, key, 'get_property_list', { list_id: listId, auth_token: 'plt_wrong' }), { error: true, data: { errors: [{ code: 'not_authorized', field: 'auth_token' }] } }, 'a wrong token is refused even for the owner')

  const updated = await tool(svc, key, 'update_property_list', { list_id: listId, auth_token: made.data.auth_token, filters: { feature_requirements: [{ feature_id: 'floor_cpm', min_value: 13 }] } })
  t.ok(UpdatePropertyListResponseSchema.safeParse(updated.data).success)
  t.match(updated.data.list, { name: 'Premium Austin gyms', filters: { feature_requirements: [{ min_value: 13 }] } })
  t.equal((await tool(svc, key, 'get_property_list', { list_id: listId })).data.list.property_count, 2, 'gym-5 and gym-6 now')
  const listed = await tool(svc, key, 'list_property_lists', { name_contains: 'premium' })
  t.ok(ListPropertyListsResponseSchema.safeParse(listed.data).success)
  t.same(listed.data.lists.map((l: { list_id: string }) => l.list_id), [listId])
  t.equal((await tool(svc, key, 'list_property_lists', {})).data.lists.length, 4)
  t.equal((await tool(svc, other, 'list_property_lists', {})).data.lists.length, 0, 'each seat lists its own')

  const deleted = await tool(svc, key, 'delete_property_list', { list_id: listId })
  t.ok(DeletePropertyListResponseSchema.safeParse(deleted.data).success)
  t.same(deleted.data, { deleted: true, list_id: listId })
  t.match(await tool(svc, key, 'get_property_list', { list_id: listId }), { error: true, data: { errors: [{ code: 'property_list_not_found' }] } }, 'gone')
  t.match((await tool(svc, key, 'get_media_buys', { media_buy_ids: [bought.data.media_buy_id] })).data.media_buys[0].packages[0], { ext: { oohbid: { screens: 3 } } }, 'the package bought on it keeps its screens')
  t.equal((await svc.request('GET', '/healthz')).status, 200, 'still serving')
})

t.test('content standards: the moderation policy, and calibration answered by the classifiers that moderate creatives', async (t) => {
  const svc = await startTestService(t, { ALLOW_PRIVATE_ASSET_URLS: 'true' })
  const { key } = await svc.onboard('standards_reader')
  const listed = await tool(svc, key, 'list_content_standards', { channels: ['dooh'] })
  t.ok(ListContentStandardsResponseSchema.safeParse(listed.data).success, 'list_content_standards answers AdCP\'s schema')
  t.match(listed.data.standards, [{ standards_id: 'oohbid_creative_policy', channels_any: ['dooh'], policy: /Rejected: adult content .* Held for human review: .* Allowed and flagged: alcohol/ }])
  t.same((await tool(svc, key, 'list_content_standards', { channels: ['podcast'] })).data.standards, [], 'none for podcasts')
  const got = await tool(svc, key, 'get_content_standards', { standards_id: 'oohbid_creative_policy' })
  t.ok(GetContentStandardsResponseSchema.safeParse(got.data).success)
  t.match(await tool(svc, key, 'get_content_standards', { standards_id: 'brand_x' }), { error: true, data: { errors: [{ code: 'content_standards_not_found', field: 'standards_id' }] } })
  t.match(await tool(svc, key, 'calibrate_content', { standards_id: 'oohbid_creative_policy' }), { error: true, data: { errors: [{ code: 'missing_required_field', field: 'artifact' }] } })

  const calibrate = async (artifact: Record<string, unknown>) => (await tool(svc, key, 'calibrate_content', { standards_id: 'oohbid_creative_policy', artifact: { property_id: { type: 'domain', value: 'example.com' }, ...artifact } })).data
  const beer = await calibrate({ artifact_id: 'beer', assets: [{ type: 'text', role: 'title', content: 'Ice cold beer at happy hour' }] })
  t.ok(CalibrateContentResponseSchema.safeParse(beer).success, 'calibrate_content answers AdCP\'s schema')
  t.match(beer, { verdict: 'pass', features: [{ feature_id: 'adult_content', status: 'passed' }] }, 'alcohol passes')
  t.match(beer.features.find((f: { feature_id: string }) => f.feature_id === 'alcohol'), { status: 'warning', explanation: /allowed and flagged/ }, 'flagged, as moderation flags it')
  t.match(await calibrate({ artifact_id: 'vote', assets: [{ type: 'text', content: 'Vote for Smith for mayor' }] }), { verdict: 'fail', explanation: /held for human review: political content/ })
  const violent = await calibrate({ artifact_id: 'war', assets: [{ type: 'video', url: 'https://assets.invalid/war.mp4', transcript: 'a bloody massacre' }] })
  t.match(violent, { verdict: 'fail', explanation: /Would be rejected: violence.*could not be fetched/ }, 'a transcript is read; an asset that cannot be fetched is said so')

  // The same image as a creative and as content: moderation's decision and calibration's verdict agree.
  const png = await adImage('Fresh Coffee', 'Every Morning')
  const base = await assetServer(t, { '/coffee.png': { body: png, type: 'image/png' } })
  const creative = await uploadedCreative(svc, key, png, 'Coffee')
  const judged = await calibrate({ artifact_id: 'coffee', assets: [{ type: 'image', url: `${base}/coffee.png` }] })
  t.equal(creative.status, 'approved', 'moderation approves the image as a creative')
  t.match(judged, { verdict: 'pass', confidence: Number }, 'and calibration passes it')
  t.ok(judged.confidence > 0.5, `with the image models' confidence (${judged.confidence})`)

  const validated = await tool(svc, key, 'validate_content_delivery', { standards_id: 'oohbid_creative_policy', records: [{ record_id: 'r-1', artifact: { artifact_id: 'a', assets: [{ type: 'text', content: 'Fresh coffee' }] } }, { record_id: 'r-2', artifact: { artifact_id: 'b', assets: [{ type: 'text', content: 'xxx porn' }] } }], feature_ids: ['adult_content'] })
  t.ok(ValidateContentDeliveryResponseSchema.safeParse(validated.data).success, 'validate_content_delivery answers AdCP\'s schema')
  t.same(validated.data.summary, { total_records: 2, passed_records: 1, failed_records: 1 })
  t.match(validated.data.results, [{ record_id: 'r-1', verdict: 'pass', features: [{ feature_id: 'adult_content', status: 'passed' }] }, { record_id: 'r-2', verdict: 'fail', features: [{ feature_id: 'adult_content', status: 'failed' }] }])
  t.equal(validated.data.results[0].features.length, 1, 'only the features asked for')
  t.equal((await tool(svc, key, 'validate_content_delivery', { records: [{ record_id: 'r-1', artifact: { artifact_id: 'a', title: 'Fresh coffee' } }], include_passed: false })).data.results.length, 0, 'passed records left out when asked')
  t.equal((await svc.request('GET', '/healthz')).status, 200, 'still serving')
})

t.test('another seat\'s media buy is not reachable through the tools', async (t) => {
  const svc = await startTestService(t)
  await market(svc)
  const owner = (await svc.onboard('owner_seat')).key
  const other = (await svc.onboard('other_seat')).key
  const products = (await tool(svc, owner, 'get_products', { brief: 'gyms in Austin' })).data.products
  const created = await tool(svc, owner, 'create_media_buy', { buyer_ref: 'q1', brand: { domain: 'owner.example' }, start_time: 'asap', end_time: new Date(svc.clock.now() + 7 * DAY).toISOString(), packages: [{ buyer_ref: 'p1', product_id: products[0].product_id, pricing_option_id: 'cpm_fixed', budget: 500 }] })
  t.equal(created.error, false, JSON.stringify(created.data))
  const id = created.data.media_buy_id
  const before = svc.snapshot()
  t.match(await tool(svc, other, 'update_media_buy', { media_buy_id: id, paused: true }), { error: true, data: { errors: [{ code: 'media_buy_not_found', field: 'media_buy_id' }] } })
  t.match(await tool(svc, other, 'update_media_buy', { buyer_ref: 'q1', packages: [{ package_id: 'pkg-0', budget: 1 }] }), { error: true, data: { errors: [{ code: 'media_buy_not_found', field: 'buyer_ref' }] } })
  t.match(await tool(svc, other, 'get_media_buy_delivery', { media_buy_ids: [id] }), { error: true, data: { errors: [{ code: 'media_buy_not_found', field: 'media_buy_ids.0' }] } })
  t.same((await tool(svc, other, 'get_media_buy_delivery', {})).data.media_buy_deliveries, [], 'its own buys only: none')
  t.match(await tool(svc, other, 'get_media_buys', { media_buy_ids: [id] }), { error: true, data: { errors: [{ code: 'media_buy_not_found', field: 'media_buy_ids.0' }] } })
  t.same((await tool(svc, other, 'get_media_buys', {})).data.media_buys, [])
  const attach = await tool(svc, other, 'sync_creatives', { creatives: [{ creative_id: 'x', name: 'x', assets: { primary: { url: 'https://assets.invalid/x.png' } } }], assignments: { x: [`${id}/pkg-0`] } })
  t.match(attach.data.creatives[0], { action: 'created', assignment_errors: { [`${id}/pkg-0`]: /No package/ } })
  t.same({ ...svc.snapshot(), creatives: 0, outbox: 0, audit: 0, meta: 0 }, { ...before, creatives: 0, outbox: 0, audit: 0, meta: 0 }, 'the owner\'s buy is untouched')
  t.equal((await tool(svc, owner, 'get_media_buy_delivery', { media_buy_ids: [id] })).data.media_buy_deliveries[0].media_buy_id, id, 'its owner still reaches it')
  svc.clock.advance(1000)
  const second = await tool(svc, owner, 'create_media_buy', { buyer_ref: 'q2', start_time: 'asap', end_time: new Date(svc.clock.now() + 3 * DAY).toISOString(), packages: [{ product_id: products[0].product_id, pricing_option_id: 'cpm_fixed', budget: 300 }] })
  const first = await tool(svc, owner, 'get_media_buys', { pagination: { max_results: 1 } })
  t.match(first.data, { media_buys: [{ media_buy_id: second.data.media_buy_id, status: 'pending_activation', total_budget: 300 }], pagination: { has_more: true, cursor: String } }, 'newest first, a page at a time')
  const next = await tool(svc, owner, 'get_media_buys', { pagination: { max_results: 1, cursor: first.data.pagination.cursor } })
  t.match(next.data, { media_buys: [{ media_buy_id: id, buyer_ref: 'q1' }], pagination: { has_more: false } })
  t.same((await tool(svc, owner, 'get_media_buys', { status_filter: ['active', 'completed'] })).data.media_buys, [], 'none is active: no creative yet')
  t.match(await tool(svc, owner, 'get_media_buys', { pagination: { cursor: 'bm9wZQ' } }), { error: true, data: { errors: [{ code: 'invalid_parameter', field: 'pagination.cursor' }] } })
})

t.test('create_media_buy and update_media_buy refuse what they cannot sell, writing nothing; dry runs write nothing', async (t) => {
  const svc = await startTestService(t)
  await market(svc)
  const { key } = await svc.onboard('careful')
  const [product] = (await tool(svc, key, 'get_products', { brief: 'gyms in Austin' })).data.products
  const end = new Date(svc.clock.now() + 7 * DAY).toISOString()
  const base = { buyer_ref: 'b1', brand: { domain: 'careful.example' }, start_time: 'asap', end_time: end }
  const g = { product_id: product.product_id, pricing_option_id: 'cpm_fixed', budget: 1000 }
  const g2 = { ...g, buyer_ref: 'second', budget: 500 }
  const before = svc.snapshot()
  const cases: Array<[string, Record<string, unknown>, string, string]> = [
    ['end before start', { ...base, start_time: new Date(svc.clock.now() + 3 * DAY).toISOString(), end_time: new Date(svc.clock.now() + DAY).toISOString(), packages: [g] }, 'invalid_date', 'end_time'],
    ['start in the past', { ...base, start_time: new Date(svc.clock.now() - DAY).toISOString(), packages: [g] }, 'invalid_date', 'start_time'],
    ['not a time', { ...base, start_time: 'tomorrow', packages: [g] }, 'invalid_date', 'start_time'],
    ['no packages', { ...base, packages: [] }, 'invalid_parameter', 'packages'],
    ['another seat\'s account', { ...base, account: { account_id: 'someone_else' }, packages: [g] }, 'not_authorized', 'account.account_id'],
    ['a live account asked of a sandbox seat', { ...base, account: { brand: { domain: 'careful.example' }, operator: 'careful.example', sandbox: false }, packages: [g] }, 'invalid_parameter', 'account.sandbox'],
    ['unknown product', { ...base, packages: [{ ...g, product_id: 'dooh:gym:US:*:*:sponsorship' }] }, 'product_not_found', 'packages.0.product_id'],
    ['product with no screens', { ...base, packages: [{ ...g, product_id: 'dooh:hospital:US:*:*:guaranteed' }] }, 'product_not_found', 'packages.0.product_id'],
    ['wrong pricing option', { ...base, packages: [{ ...g, pricing_option_id: 'cpm_auction' }] }, 'invalid_parameter', 'packages.0.pricing_option_id'],
    ['fixed price with a bid', { ...base, packages: [{ ...g, bid_price: 20 }] }, 'invalid_parameter', 'packages.0.bid_price'],
    ['negative budget', { ...base, packages: [{ ...g, budget: -5 }] }, 'invalid_budget', 'packages.0.budget'],
    ['below the minimum spend', { ...base, packages: [{ ...g, budget: 1 }] }, 'invalid_budget', 'packages.0.budget'],
    ['more than the screens can play', { ...base, packages: [{ ...g, budget: 10_000_000 }] }, 'capacity_unavailable', 'packages.0.budget'],
    ['front_loaded pacing', { ...base, packages: [{ ...g, pacing: 'front_loaded' }] }, 'invalid_parameter', 'packages.0.pacing'],
    ['the second package fails', { ...base, packages: [g, { ...g2, bid_price: 1 }] }, 'invalid_parameter', 'packages.1.bid_price']
  ]
  for (const [name, args, code, field] of cases) {
    const r = await tool(svc, key, 'create_media_buy', args)
    t.equal(r.error, true, name)
    t.match(r.data.errors?.[0], { code, field }, name)
  }
  t.same({ ...svc.snapshot(), outbox: 0, audit: 0 }, { ...before, outbox: 0, audit: 0 }, 'nothing written, no spot booked')
  const dry = await rpc(svc, key, { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'create_media_buy', arguments: { ...base, packages: [g, g2] } } }, {}, '?dry_run=true')
  t.match(dry.body, { dry_run: true, data: { result: { structuredContent: { media_buy_id: /^mb_/, packages: [{ package_id: 'pkg-0' }, { package_id: 'pkg-1' }] } } } }, '?dry_run=true answers what would be bought')
  t.same({ ...svc.snapshot(), outbox: 0, audit: 0 }, { ...before, outbox: 0, audit: 0 }, 'and records nothing')
  const made = await tool(svc, key, 'create_media_buy', { ...base, packages: [g, g2] })
  t.equal(made.error, false, JSON.stringify(made.data))
  const id = made.data.media_buy_id
  const afterCreate = svc.snapshot()
  const updates: Array<[string, Record<string, unknown>, string, string]> = [
    ['unknown package', { media_buy_id: id, packages: [{ package_id: 'pkg-9', budget: 5 }] }, 'package_not_found', 'packages.0.package_id'],
    ['a bid on the fixed price', { media_buy_id: id, packages: [{ package_id: 'pkg-0', bid_price: 30 }] }, 'invalid_parameter', 'packages.0.bid_price'],
    ['more than the screens can play', { media_buy_id: id, packages: [{ package_id: 'pkg-0', budget: 10_000_000 }] }, 'capacity_unavailable', 'packages.0.budget'],
    ['no media buy named', { packages: [{ package_id: 'pkg-0', budget: 5 }] }, 'invalid_parameter', 'media_buy_id'],
    ['the second change fails', { media_buy_id: id, packages: [{ buyer_ref: 'second', budget: 900 }, { package_id: 'pkg-7' }] }, 'package_not_found', 'packages.1.package_id']
  ]
  for (const [name, args, code, field] of updates) {
    const r = await tool(svc, key, 'update_media_buy', args)
    t.equal(r.error, true, name)
    t.match(r.data.errors?.[0], { code, field }, name)
  }
  t.same({ ...svc.snapshot(), outbox: 0, audit: 0 }, { ...afterCreate, outbox: 0, audit: 0 }, 'no change kept')
  t.match((await tool(svc, key, 'get_media_buy_delivery', { media_buy_ids: [id] })).data.media_buy_deliveries[0].by_package, [{ package_id: 'pkg-0' }, { package_id: 'pkg-1', buyer_ref: 'second', rate: 16.8 }], 'the buy as it was')
  // An approved seat's AdCP test run (X-Dry-Run: true) is a dry run; a sandbox seat's is real (see the runner test).
  await svc.admin('POST', '/admin/v1/seats/careful/approve', { reason: 'test' })
  const header = await tool(svc, key, 'create_media_buy', { ...base, buyer_ref: 'b2', packages: [g] }, { 'x-dry-run': 'true' })
  t.equal(header.error, false)
  t.equal(svc.snapshot().mediaBuys, afterCreate.mediaBuys, 'X-Dry-Run on an approved seat records nothing')
  t.equal((await svc.request('GET', '/healthz')).status, 200, 'still serving')
})

t.test('the README\'s example agent (scripts/agent-buy.ts, on @adcp/client) buys a screen package', async (t) => {
  const svc = await startTestService(t)
  await market(svc)
  const { key } = await svc.onboard('example_agent')
  const { stdout } = await run(process.execPath, ['dist/scripts/agent-buy.js', '--url', `${svc.url}/mcp`, '--key', key, '--brief', 'gyms in Austin', '--budget', '2000', '--creative-url', 'https://assets.invalid/spot.png'], { timeout: 60_000 })
  const steps: Record<string, any> = Object.fromEntries(stdout.trim().split('\n').map((line) => JSON.parse(line)).map((s: { step: string }) => [s.step, s]))
  t.match(steps.get_products, { chosen: 'dooh:gym:US:TX:austin:guaranteed', cpm: 16.8 })
  t.match(steps.create_media_buy, { media_buy_id: /^mb_/, status: 'pending_activation', booked_impressions: 119047 })
  t.match(steps.sync_creatives, { action: 'created', status: 'pending_review', assigned_to: [`${steps.create_media_buy.media_buy_id}/pkg-0`] })
  t.match(steps.get_media_buy_delivery, { status: 'pending_activation', totals: { impressions: 0, spend: 0 } })
  const [creative] = (await svc.request('GET', '/openrtb/v2/creatives', { key })).body.data.creatives
  t.match(creative, { crid: steps.sync_creatives.creative_id, status: /pending_moderation|rejected/ }, 'the seat\'s creative, under the agent\'s own id, in moderation')
})
