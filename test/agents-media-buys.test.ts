import { GetMediaBuysResponseSchema } from '@adcp/client'
import t from 'tap'
import { rpc, tool, conformance, market, DAY, MONDAY_9AM_AUSTIN, playSpot } from './helpers/agents.js'
import { approvedCreative } from './helpers/creatives.js'
import { sendAudience } from './helpers/fleet.js'
import { startTestService } from './helpers/service.js'

// AI buying agents over MCP (test/helpers/agents.ts): create_media_buy and update_media_buy: a buy becomes campaigns
// and placements REST clients see, preferred and auction packages in the waterfall, another seat's buys out of reach,
// refusals that write nothing.

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
  // Monday 09:00 in Austin.
  const svc = await startTestService(t, { PICKUP_SECONDS: '5' }, { at: MONDAY_9AM_AUSTIN })
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
  const play = async () => await playSpot(svc, embed)
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
