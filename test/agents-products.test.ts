import { ProvidePerformanceFeedbackResponseSchema } from '@adcp/client'
import t from 'tap'
import { tool, market, DAY } from './helpers/agents.js'
import { startTestService } from './helpers/service.js'

// AI buying agents over MCP (test/helpers/agents.ts): get_products read from a brief, and performance feedback ranking
// a buyer's products.

// One service and one market for the file: each test has seats of its own.
const svc = await startTestService(t)
const { partner } = await market(svc)

t.test('get_products reads the brief: segments, prices from the screens, forecasts, properties as in sellers.json', async (t) => {
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

t.test('provide_performance_feedback: kept with the buy, shown in its delivery, and ranking that buyer\'s products', async (t) => {
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
  // The neighbour's order as it stands on this day: a day's forecast can reorder unrated segments too.
  const theirs = await segments(neighbour)
  const period = { start: new Date(svc.clock.now() - DAY).toISOString(), end: new Date(svc.clock.now() - 1000).toISOString() }
  const poor = await tool(svc, key, 'provide_performance_feedback', { media_buy_id: mediaBuyId, measurement_period: period, performance_index: 0.5, metric_type: 'brand_lift', feedback_source: 'third_party_measurement', context: { trace: 'f-1' } })
  t.equal(poor.error, false, JSON.stringify(poor.data))
  t.ok(ProvidePerformanceFeedbackResponseSchema.safeParse(poor.data).success, 'answers AdCP\'s schema')
  t.match(poor.data, { success: true, context: { trace: 'f-1' } })
  t.same(await segments(), [['airport', undefined], ['gym', 0.5]], 'gyms, rated 0.5 by this buyer (Austin gyms tell about US gyms), come after the airport it did not rate')
  const good = await tool(svc, key, 'provide_performance_feedback', { buyer_ref: 'rated', package_id: 'austin-gyms', measurement_period: period, performance_index: 1.9, creative_id: 'spot-1' })
  t.equal(good.error, false, JSON.stringify(good.data))
  t.same(await segments(), [['gym', 1.2], ['airport', undefined]], 'a package rated 1.9 beside it: the mean, 1.2, puts gyms first')
  t.ok(theirs.every(([, index]) => index === undefined), 'the neighbour rated nothing')
  t.same(await segments(neighbour), theirs, 'another buyer\'s catalog is not moved by this buyer\'s ratings')
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
