import { createHmac, timingSafeEqual } from 'node:crypto'
import t from 'tap'
import { approvedCreative } from './helpers/creatives.js'
import { startTestService } from './helpers/service.js'
import { bySeat, market, MONDAY_NOON_AUSTIN, type SeatName } from './helpers/auction-market.js'

// The waterfall a screen's player runs for each spot, as buyers and players observe it: who wins, what they pay, the
// notices each bid gets (nurl, lurl, burl with their macros; signed legacy POSTs), billing at play time, stats.

t.test('the open auction: second price plus a cent, nurl and lurl with their macros, billing at play time', async (t) => {
  const svc = await startTestService(t, { ALLOW_PRIVATE_CALLBACK_URLS: 'true' }, { at: MONDAY_NOON_AUSTIN })
  const m = await market(t, svc)
  await m.threeBids()
  t.equal(svc.service.store.bids.getCount(), 3, 'three bids wait in the book')

  const spot = await m.next()
  t.match(spot, { tier: 'open_auction', screen_id: m.screenId, duration_seconds: 15, creative: { creative_id: m.seats.bravo.creative, url: new RegExp(`/embed/${m.token}/assets/`) }, adm: '<div>bravo</div>' })
  t.match(spot.spot_id, /^spt_/)
  t.equal(svc.service.store.bids.getCount(), 0, 'every bid on the screen was settled')
  const { rtb } = await m.delivered()
  const wins = bySeat(rtb, '/win')
  const losses = bySeat(rtb, '/loss')
  t.same(Object.keys(wins), ['bravo'], 'only the winner gets its nurl')
  t.same(wins.bravo, { seat: 'bravo', price: '6.01', imp: m.seats.bravo.imp, bid: 'response-bravo', auction: 'auction-bravo', mult: '6', cur: 'USD' }, 'nurl: clearing price = runner-up + 0.01; BidResponse.bidid; the offered multiplier')
  t.same(losses.alpha, { seat: 'alpha', code: '102', min: '7.01' }, 'outbid: 102 with the price that would have won')
  t.same(losses.charlie, { seat: 'charlie', code: '102', min: '7.01' })
  t.notOk(rtb.some((r) => r.path === '/bill'), 'no billing before the play')

  const events = `/embed/${m.token}/spots/${spot.spot_id}/events`
  const started = await svc.request('POST', events, { body: { event: 'render_started' } })
  t.match(started.body.data, { status: 'started', duplicate: false })
  svc.clock.advance(15_000)
  const done = await svc.request('POST', events, { body: { event: 'play_completed', duration_ms: 15_000 } })
  t.match(done.body.data, { status: 'completed', duplicate: false, billed: true })
  const again = await svc.request('POST', events, { body: { event: 'play_completed', duration_ms: 15_000 } })
  t.match(again.body.data, { duplicate: true, status: 'completed' }, 'a repeated report changes nothing')
  const bills = (await m.delivered()).rtb.filter((r) => r.path === '/bill')
  t.equal(bills.length, 1, 'billed once')
  t.same(Object.fromEntries(bills[0]!.query), { seat: 'bravo', price: '6.01', mult: '6', ts: String(MONDAY_NOON_AUSTIN + 15_000) }, 'burl: clearing price, confirmed multiplier, play time')

  const stats = (await svc.request('GET', '/openrtb/v2/stats', { key: m.seats.bravo.key })).body.data
  t.match(stats, { bids: 1, accepted: 1, wins: 1, win_rate: 1, avg_win_cpm: 6.01, spend_usd: 0.03606 }, 'a play costs 6.01 / 1000 x 6 faces')
  const alpha = (await svc.request('GET', '/openrtb/v2/stats', { key: m.seats.alpha.key })).body.data
  t.match(alpha, { bids: 1, accepted: 1, wins: 0, win_rate: 0, spend_usd: 0 })

  // The analytics process ships the funnel log and deletes what ClickHouse has at any moment: read ClickHouse.
  await svc.service.analytics.drain()
  const db = svc.service.config.clickhouseDatabase
  const rows = async (sql: string) => await svc.service.analytics.query(sql)
  const stages: Record<string, unknown> = {}
  for (const [stage, table] of Object.entries({ request: 'bid_requests', bid_received: 'bids', auction: 'auctions', proof: 'proofs' })) {
    stages[stage] = (await rows(`SELECT count() AS n FROM ${db}.${table}`))[0]!.n
  }
  for (const { stage, n } of await rows(`SELECT stage, count() AS n FROM ${db}.plays GROUP BY stage`)) stages[stage as string] = n
  t.match(stages, { request: Number, bid_received: 3, auction: 1, proof: 1, render_started: 1, play_completed: 1 }, 'the funnel recorded each stage')
  t.ok((stages.request as number) >= 1, 'the adslots requests among them')
  t.same(await rows(`SELECT seat_id, screen_id, tier, clearing_cpm, multiplier, cost_usd FROM ${db}.plays WHERE stage = 'play_completed'`), [
    { seat_id: 'bravo', screen_id: m.screenId, tier: 'open_auction', clearing_cpm: 6.01, multiplier: 6, cost_usd: 0.03606 }
  ], 'the play, priced')
})

t.test('legacy win/loss notifications are signed with the seat\'s API key', async (t) => {
  const svc = await startTestService(t, { ALLOW_PRIVATE_CALLBACK_URLS: 'true' }, { at: MONDAY_NOON_AUSTIN })
  const m = await market(t, svc)
  await m.bid('alpha', 3)
  await m.bid('bravo', 4)
  await m.next()
  const { legacy } = await m.delivered()
  t.equal(legacy.length, 2)
  for (const n of legacy) {
    const seat = n.path.split('/').pop() as SeatName
    const sig = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(String(n.headers['x-service-signature']))
    t.ok(sig, 'X-Service-Signature: t=...,v1=...')
    t.equal(n.headers['x-service-timestamp'], sig![1])
    t.equal(n.headers['x-service-key-prefix'], m.seats[seat].prefix, 'names the key that signed')
    t.match(n.headers['x-service-delivery-id'], /^ntf_/)
    t.equal(n.headers['content-type'], 'application/json')
    const expected = createHmac('sha256', m.seats[seat].key).update(`${sig![1]}.${n.body}`).digest()
    t.ok(timingSafeEqual(expected, Buffer.from(sig![2]!, 'hex')), `${seat}: HMAC-SHA256 keyed by the API key over "<t>.<body>" verifies`)
    const forged = createHmac('sha256', 'not-the-key').update(`${sig![1]}.${n.body}`).digest('hex')
    t.not(forged, sig![2], 'another key does not verify')
  }
  const won = JSON.parse(legacy.find((n) => n.headers['x-service-event'] === 'bid.won')!.body)
  t.match(won, { event: 'bid.won', data: { bid_id: 'bid-bravo', seat_id: 'bravo', bid_price_cpm: 4, win_price_cpm: 3.01, tier: 'open_auction', screen: { screen_id: m.screenId, venue_type: 'hotel_lobby', city: 'Austin', country: 'US' } } })
  const lost = JSON.parse(legacy.find((n) => n.headers['x-service-event'] === 'bid.lost')!.body)
  t.match(lost, { event: 'bid.lost', data: { bid_id: 'bid-alpha', loss_code: 102, loss_reason: 'lost to higher bid', min_to_win_cpm: 4.01 } })
  t.notOk(JSON.stringify(svc.service.store.keys.get((await svc.request('GET', '/openrtb/v2/seat', { key: m.seats.alpha.key })).body.data.key.key_id)).includes(m.seats.alpha.key), 'the key is kept sealed, never in the clear')

  // A receiver that fails gets the same delivery again (same id, fresh signature) on the retry schedule.
  m.legacy.failNext(1)
  await m.bid('charlie', 9)
  await m.next()
  await svc.service.sender.idle()
  const first = m.legacy.received.at(-1)!
  svc.clock.advance(1_000)
  const { legacy: retried } = await m.delivered()
  t.equal(retried.at(-1)!.headers['x-service-delivery-id'], first.headers['x-service-delivery-id'], 'a retry keeps the delivery id')
  t.equal(svc.service.notices.size(), 0, 'delivered and gone from the queue')
})

t.test('the waterfall order: placements, Preferred, PMP, the open auction, then the house', async (t) => {
  const svc = await startTestService(t, { ALLOW_PRIVATE_CALLBACK_URLS: 'true' }, { at: MONDAY_NOON_AUSTIN })
  const m = await market(t, svc)
  const today = '2026-11-23'
  const deal = async (seat: SeatName, body: Record<string, unknown>) => {
    const r = await svc.request('POST', '/openrtb/v2/deals/propose', { key: m.seats[seat].key, body: { start_date: today, end_date: today, targeting: { screen_ids: [m.screenId] }, ...body } })
    await svc.admin('POST', `/admin/v1/deals/${r.body.data.deal_id}/approve`, {})
    return r.body.data.deal_id as string
  }
  const preferred = await deal('charlie', { deal_id: 'pref-1', type: 'Preferred', floor_cpm: 3, fixed_cpm: 4 })
  const pmp = await deal('alpha', { deal_id: 'pmp-1', type: 'PMP', floor_cpm: 3 })
  const assign = await svc.request('POST', '/openrtb/v2/campaigns/assign', { key: m.seats.alpha.key, body: { creative_id: m.seats.alpha.creative, screen_ids: [m.screenId], start_date: today, end_date: today, spots_per_day: 1 } })
  t.equal(assign.status, 201)
  // Imps are issued again so that they carry the deals; placements take effect after the pickup window.
  for (const id of ['alpha', 'charlie'] as const) {
    const reqs = (await svc.request('GET', '/openrtb/v2/adslots?format=openrtb&limit=10', { key: m.seats[id].key })).body.data.bid_requests as any[]
    const r = reqs.find((x) => x.ext.trb.screen_id === m.screenId)
    m.seats[id].imp = r.imp[0].id
    t.ok(r.imp[0].pmp.deals.length > 0, `${id}'s bid request carries its deal`)
  }
  svc.clock.advance(31_000)

  await m.bid('charlie', 4, { dealid: preferred })
  await m.bid('alpha', 5, { dealid: pmp })
  await m.bid('bravo', 9)
  const first = await m.next()
  t.match(first, { tier: 'guaranteed', creative: { creative_id: m.seats.alpha.creative } }, 'a placement behind its pace plays first')
  t.notOk('adm' in first)
  let rtb = (await m.delivered()).rtb
  t.same(Object.values(bySeat(rtb, '/loss')).map((q) => q.code).sort(), ['103', '103', '103'], 'every bid lost to the placement: 103')

  await m.bid('charlie', 4, { dealid: preferred })
  await m.bid('alpha', 5, { dealid: pmp })
  await m.bid('bravo', 9)
  t.match(await m.next(), { tier: 'preferred', creative: { creative_id: m.seats.charlie.creative } }, 'the day\'s placement spot is used up; Preferred beats PMP and open')
  rtb = (await m.delivered()).rtb
  t.equal(bySeat(rtb, '/win').charlie!.price, '4', 'a Preferred deal clears at its fixed price')
  t.same([bySeat(rtb, '/loss').alpha!.code, bySeat(rtb, '/loss').bravo!.code], ['103', '103'])

  await m.bid('alpha', 5, { dealid: pmp })
  await m.bid('bravo', 9)
  t.match(await m.next(), { tier: 'pmp', creative: { creative_id: m.seats.alpha.creative } })
  rtb = (await m.delivered()).rtb
  t.equal(bySeat(rtb, '/win').alpha!.price, '5', 'PMP is first price')
  t.equal(bySeat(rtb, '/loss').bravo!.code, '103', 'the open bid lost to a deal')

  await m.bid('bravo', 9)
  t.match(await m.next(), { tier: 'open_auction' })
  t.equal(bySeat((await m.delivered()).rtb, '/win').bravo!.price, '2.01', 'alone in the open auction: the floor plus a cent')

  const house = await m.next()
  t.match(house, { tier: 'house', creative: null, spot_id: null }, 'nothing to play: the house tier, the player shows its own slate, and no spot is recorded')
  t.notOk('events_url' in house, 'nothing to report')
  const houseCreative = await approvedCreative(svc, m.seats.bravo.key, 'house ad')
  t.equal((await svc.admin('PUT', '/admin/v1/settings', { house_creative_id: houseCreative })).status, 200)
  const played = await m.next()
  t.match(played, { tier: 'house', creative: { creative_id: houseCreative } })
  t.match(played.spot_id, /^spt_/, 'the house creative plays a recorded spot')
  t.equal((await svc.admin('PUT', '/admin/v1/settings', { house_creative_id: 'nope' })).body.error_code, 'creative_not_found')
})
