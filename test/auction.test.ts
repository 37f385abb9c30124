import { createHmac, timingSafeEqual } from 'node:crypto'
import t from 'tap'
import { approvedCreative, unapprovedCreative } from './helpers/creatives.js'
import { eventually } from './helpers/eventually.js'
import { deviceBody, registerPartner, sendAudience } from './helpers/fleet.js'
import { startReceiver, type Received } from './helpers/receiver.js'
import { startTestService, type TestService } from './helpers/service.js'
import { ScreenClaims } from '../src/bidding/auction/claims.js'

// The waterfall a screen's player runs for each spot, as buyers and players observe it: who wins, what they pay, the
// notices each bid gets (nurl, lurl, burl with their macros; signed legacy POSTs), billing at play time, stats.

const MONDAY_NOON_AUSTIN = Date.UTC(2026, 10, 23, 18, 0, 0)

type SeatName = 'alpha' | 'bravo' | 'charlie'

async function market (t: { teardown (fn: () => unknown): void }, svc: TestService) {
  const rx = await startReceiver(t)
  const legacy = await startReceiver(t, true)
  const p = await registerPartner(svc)
  const dev = await svc.request('POST', '/v1/partner/device', { key: p.key, body: deviceBody('lobby', { floor_price_cpm: 2, location: { venue_type: 'hotel_lobby' } }) })
  const screenId = dev.body.data.screen_id as string
  const token = new URL(dev.body.data.embed_url).pathname.split('/').pop()!
  await sendAudience(svc, p, [{ device_id: 'lobby', live_face_count: 6, attention_score: 0.5 }])
  const seats = {} as Record<SeatName, { key: string, creative: string, imp: string, prefix: string }>
  for (const id of ['alpha', 'bravo', 'charlie'] as const) {
    const { key } = await svc.onboard(id, { notification_url: `${legacy.url}/notify/${id}` })
    await svc.admin('PUT', `/admin/v1/seats/${id}/rate-limits`, { limits: { inventory: 100000, bidding: 100000, campaigns: 100000, deals: 100000 } })
    await svc.admin('POST', `/admin/v1/seats/${id}/approve`)
    const creative = await approvedCreative(svc, key, `${id} ad`)
    const requests = (await svc.request('GET', '/openrtb/v2/adslots?format=openrtb&limit=10', { key })).body.data.bid_requests as any[]
    seats[id] = { key, creative, imp: requests.find((r) => r.ext.trb.screen_id === screenId).imp[0].id, prefix: key.slice(0, 12) }
  }
  const bid = async (id: SeatName, price: number, extra: Record<string, unknown> = {}) => {
    const s = seats[id]
    const r = await svc.request('POST', '/openrtb/v2/bid', {
      key: s.key,
      body: {
        id: `auction-${id}`,
        bidid: `response-${id}`,
        seatbid: [{
          seat: id,
          bid: [{
            id: `bid-${id}`, impid: s.imp, price, crid: s.creative, adm: `<div>${id}</div>`, adomain: [`${id}.example`],
            nurl: `${rx.url}/win?seat=${id}&price=\${AUCTION_PRICE}&imp=\${AUCTION_IMP_ID}&bid=\${AUCTION_BID_ID}&auction=\${AUCTION_ID}&mult=\${AUCTION_MULTIPLIER}&cur=\${AUCTION_CURRENCY}`,
            lurl: `${rx.url}/loss?seat=${id}&code=\${AUCTION_LOSS}&min=\${AUCTION_MIN_TO_WIN}`,
            burl: `${rx.url}/bill?seat=${id}&price=\${AUCTION_PRICE}&mult=\${AUCTION_MULTIPLIER}&ts=\${AUCTION_IMP_TS}`,
            ...extra
          }]
        }]
      }
    })
    if (r.body.data?.accepted !== 1) throw new Error(`bid of ${id} not accepted: ${r.text}`)
    return r
  }
  /** The open auction several tests start from: bravo's 7 wins at 6.01 over charlie's 6 and alpha's 5. */
  const threeBids = async () => {
    await bid('alpha', 5)
    await bid('bravo', 7)
    await bid('charlie', 6)
  }
  const next = async () => {
    const r = await svc.request('POST', `/embed/${token}/spots`, { body: {} })
    if (r.status !== 201 && r.status !== 200) throw new Error(r.text)
    return r.body.data
  }
  /** Notices delivered since the last call. */
  let seen = 0
  let seenLegacy = 0
  const delivered = async () => {
    await svc.service.sender.idle()
    const out = { rtb: rx.received.slice(seen), legacy: legacy.received.slice(seenLegacy) }
    seen = rx.received.length
    seenLegacy = legacy.received.length
    return out
  }
  return { rx, legacy, p, screenId, token, seats, bid, threeBids, next, delivered }
}

const bySeat = (list: Received[], path: string): Record<string, Record<string, string>> => Object.fromEntries(list.filter((r) => r.path === path).map((r) => [r.query.get('seat'), Object.fromEntries(r.query)]))

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

t.test('bids that cannot play lose with their OpenRTB loss codes; expired bids get code 2', async (t) => {
  const svc = await startTestService(t, { ALLOW_PRIVATE_CALLBACK_URLS: 'true' }, { at: MONDAY_NOON_AUSTIN })
  const m = await market(t, svc)
  await m.bid('alpha', 5)
  await svc.request('PATCH', `/v1/partner/screens/${m.screenId}`, { key: m.p.key, body: { floor_price_cpm: 6 } })
  await m.bid('bravo', 7)
  await m.bid('charlie', 8)
  await svc.admin('POST', '/admin/v1/seats/charlie/suspend', { reason: 'test' })
  const spot = await m.next()
  t.match(spot, { tier: 'open_auction', creative: { creative_id: m.seats.bravo.creative } })
  const { rtb, legacy } = await m.delivered()
  t.equal(bySeat(rtb, '/loss').alpha!.code, '100', 'below the floor raised since its imp was issued: 100')
  t.equal(bySeat(rtb, '/loss').charlie!.code, '104', 'a seat suspended since it bid: 104')
  t.equal(bySeat(rtb, '/win').bravo!.price, '6.01', 'alone above the floor now in force: that floor plus a cent')
  t.ok(legacy.some((n) => JSON.parse(n.body).data.loss_code === 100))

  await m.bid('alpha', 9)
  svc.clock.advance(301_000)
  await svc.service.runJobs()
  const expired = await m.delivered()
  t.same(bySeat(expired.rtb, '/loss').alpha, { seat: 'alpha', code: '2', min: '' }, 'lurl with ${AUCTION_LOSS} 2')
  t.match(JSON.parse(expired.legacy[0]!.body), { event: 'bid.lost', data: { loss_code: 2, loss_reason: 'impression opportunity expired' } })
  t.equal(svc.service.store.bids.getCount(), 0)
  t.equal(svc.service.store.bidExpiry.getCount(), 0)
})

t.test('sandbox bids never reach the auction; closed screens play nothing; dry runs settle nothing', async (t) => {
  const svc = await startTestService(t, { ALLOW_PRIVATE_CALLBACK_URLS: 'true' }, { at: MONDAY_NOON_AUSTIN })
  const m = await market(t, svc)
  const { key } = await svc.onboard('sandy')
  const creative = await approvedCreative(svc, key, 'sandbox ad')
  const reqs = (await svc.request('GET', '/openrtb/v2/adslots?format=openrtb&limit=10', { key })).body.data.bid_requests as any[]
  const imp = reqs.find((x) => x.ext.trb.screen_id === m.screenId).imp[0].id
  const r = await svc.request('POST', '/openrtb/v2/bid', { key, body: { id: 'sb', seatbid: [{ bid: [{ id: 'sb-1', impid: imp, price: 50, crid: creative, adm: 'x', nurl: `${m.rx.url}/win?seat=sandy` }] }] } })
  t.match(r.body.data, { sandbox: true, accepted: 1, results: [{ stored: false }] })
  t.match(await m.next(), { tier: 'house' }, 'a sandbox bid is scored, never played')

  await m.bid('bravo', 5)
  const dry = await svc.request('POST', `/embed/${m.token}/spots?dry_run=true`, { body: {} })
  t.match(dry.body, { dry_run: true, data: { tier: 'open_auction', creative: { creative_id: m.seats.bravo.creative } } }, 'a dry run shows what would play')
  t.equal(svc.service.store.bids.getCount(), 1, 'and settles nothing')
  t.equal((await m.delivered()).rtb.length, 0)

  await svc.request('PATCH', `/v1/partner/screens/${m.screenId}`, { key: m.p.key, body: { operating_hours: { tue: [['09:00', '17:00']] } } })
  const closed = await m.next()
  t.match(closed, { tier: 'closed', spot_id: null, creative: null, duration_seconds: 300 }, 'outside operating hours: ask again later')
  t.equal(svc.service.store.bids.getCount(), 1, 'a closed screen settles no bid')

  const unknown = await svc.request('POST', '/embed/emb_nope/spots', { body: {} })
  t.match(unknown, { status: 404, body: { error_code: 'screen_not_found' } })
  const noSpot = await svc.request('POST', `/embed/${m.token}/spots/spt_nope/events`, { body: { event: 'render_started' } })
  t.match(noSpot, { status: 404, body: { error_code: 'spot_not_found' } })
})

t.test('players asking for one screen at once: one decision settles its bids, the others follow it', async (t) => {
  const svc = await startTestService(t, { ALLOW_PRIVATE_CALLBACK_URLS: 'true' }, { at: MONDAY_NOON_AUSTIN })
  const m = await market(t, svc)
  await m.threeBids()
  // Twelve at once, on as many connections, which the kernel spreads over the hot threads. A decision waits 250 ms
  // for another thread's on the same screen, then answers 409 spot_in_progress with Retry-After, which a machine this
  // busy can reach: such a player asks again after it, as the player page does.
  const ask = (i: number) => eventually(t, `player ${i} answered`, () => svc.request('POST', `/embed/${m.token}/spots`, { body: {} }), { every: 1000, until: (r) => r.status !== 409 })
  const spots = await Promise.all(Array.from({ length: 12 }, (_, i) => ask(i)))
  t.same(spots.filter((s) => s.status !== 201 && s.status !== 200).map((s) => s.text), [], 'every one answered')
  t.same(spots.map((s) => s.body.data.tier).filter((tier) => tier === 'open_auction'), ['open_auction'], 'one auction; the rest came after it')
  const { rtb } = await m.delivered()
  t.same(rtb.filter((r) => r.path === '/win').map((r) => r.query.get('seat')), ['bravo'], 'one win notice')
  t.same(rtb.filter((r) => r.path === '/loss').map((r) => r.query.get('seat')).sort(), ['alpha', 'charlie'], 'one loss notice each')
  t.equal(svc.service.store.bids.getCount(), 0, 'the book is empty')
  t.match((await svc.request('GET', '/openrtb/v2/stats', { key: m.seats.bravo.key })).body.data, { wins: 1 })
})

t.test('a decision that meets another\'s on its screen waits for it to be recorded; one that cannot wait is 409 spot_in_progress', async (t) => {
  const svc = await startTestService(t, { ALLOW_PRIVATE_CALLBACK_URLS: 'true' }, { at: MONDAY_NOON_AUSTIN })
  const m = await market(t, svc)
  await m.bid('alpha', 5)
  // A decision of another hot thread whose writes are not applied yet holds the screen's claim.
  const other = new ScreenClaims(99, { buffer: svc.service.claims.buffer, counters: svc.service.claims.counters })
  t.equal(other.take(m.screenId), 'taken')
  const before = svc.snapshot()
  const dry = await svc.request('POST', `/embed/${m.token}/spots?dry_run=true`, { body: {} })
  t.match(dry, { status: 409, body: { error_code: 'spot_in_progress', retry_after_seconds: 1 } }, 'a dry run holds the writer lock and cannot wait')
  t.equal(dry.headers.get('retry-after'), '1')
  const keyed = await svc.request('POST', `/embed/${m.token}/spots`, { body: {}, headers: { 'idempotency-key': 'spot-1' } })
  t.match(keyed, { status: 409, body: { error_code: 'spot_in_progress' } }, 'nor can a request with an Idempotency-Key')
  const started = Date.now()
  const waited = await svc.request('POST', `/embed/${m.token}/spots`, { body: {} })
  t.match(waited, { status: 409, body: { error_code: 'spot_in_progress' } }, 'a decision never recorded is waited for a moment, not longer')
  t.ok(Date.now() - started >= 250, `answered after ${Date.now() - started} ms`)
  t.same(svc.snapshot(), before, 'nothing written')
  const pending = svc.request('POST', `/embed/${m.token}/spots`, { body: {} })
  setTimeout(() => other.release(m.screenId), 50)
  t.match(await pending, { status: 201, body: { data: { tier: 'open_auction' } } }, 'once it is recorded, the waiting request decides')
  const retried = await svc.request('POST', `/embed/${m.token}/spots`, { body: {}, headers: { 'idempotency-key': 'spot-1' } })
  t.match(retried, { status: 200, body: { data: { tier: 'house', spot_id: null } } }, 'a 409 that says when to retry is not the key\'s outcome: the retry decides')
  t.equal(retried.headers.get('idempotent-replayed'), null)
})

t.test('a failing nurl receiver is retried on schedule, then given up', async (t) => {
  const svc = await startTestService(t, { ALLOW_PRIVATE_CALLBACK_URLS: 'true' }, { at: MONDAY_NOON_AUSTIN })
  const m = await market(t, svc)
  m.rx.failNext(100, 503)
  await m.bid('bravo', 5)
  await m.next()
  await svc.service.sender.idle()
  const attempts = () => m.rx.received.filter((r) => r.path === '/win').length
  t.equal(attempts(), 1)
  for (const wait of [1, 4, 15, 60, 300]) {
    svc.clock.advance(wait * 1000)
    await svc.service.sender.idle()
  }
  t.equal(attempts(), 6, 'the first attempt and five retries')
  svc.clock.advance(3_600_000)
  await svc.service.sender.idle()
  t.equal(attempts(), 6, 'then dropped')
  t.equal(svc.service.notices.size(), 0)
  const metrics = (await svc.request('GET', '/metrics')).text
  t.match(metrics, /oohbid_notices_total\{kind="nurl",result="dropped"\} 1/)
  t.match(metrics, /oohbid_notices_total\{kind="nurl",result="retrying"\} 5/)
})

t.test('production bids refused at intake get their lurl at once with the matching loss code', async (t) => {
  const svc = await startTestService(t, { ALLOW_PRIVATE_CALLBACK_URLS: 'true' }, { at: MONDAY_NOON_AUSTIN })
  const m = await market(t, svc)
  const deal = await svc.request('POST', '/openrtb/v2/deals/propose', { key: m.seats.alpha.key, body: { deal_id: 'pmp-floor', type: 'PMP', floor_cpm: 6, start_date: '2026-11-23', end_date: '2026-11-23', targeting: { screen_ids: [m.screenId] } } })
  await svc.admin('POST', `/admin/v1/deals/${deal.body.data.deal_id}/approve`, {})
  m.seats.alpha.imp = (await svc.request('GET', '/openrtb/v2/adslots?format=openrtb&limit=10', { key: m.seats.alpha.key })).body.data.bid_requests.find((r: any) => r.ext.trb.screen_id === m.screenId).imp[0].id
  const pending = await unapprovedCreative(svc, m.seats.alpha.key)
  const rejectedCreative = (await svc.request('POST', '/openrtb/v2/creatives', { key: m.seats.alpha.key, body: { name: 'Broken', content_type: 'image/png', creative_url: 'https://assets.invalid/broken.png' } })).body.data.creative_id
  await svc.service.moderator.idle()
  const lurl = (id: string) => `${m.rx.url}/loss?seat=${id}&code=\${AUCTION_LOSS}&min=\${AUCTION_MIN_TO_WIN}`
  const cases: Array<[string, Record<string, unknown>, string, string]> = [
    ['below-floor', { price: 1 }, '100', '2'],
    ['below-deal-floor', { price: 5, dealid: 'pmp-floor' }, '101', '6'],
    ['pending-creative', { price: 5, crid: pending }, '201', ''],
    ['rejected-creative', { price: 5, crid: rejectedCreative }, '202', ''],
    ['foreign-creative', { price: 5, crid: m.seats.bravo.creative }, '202', ''],
    ['no-markup', { price: 5, adm: undefined }, '7', ''],
    ['bad-deal', { price: 9, dealid: 'nope' }, '4', '']
  ]
  const bids = cases.map(([id, over]) => ({ id, impid: m.seats.alpha.imp, crid: m.seats.alpha.creative, adm: '<b>x</b>', lurl: lurl(id), ...over }))
  const r = await svc.request('POST', '/openrtb/v2/bid', { key: m.seats.alpha.key, body: { id: 'intake', seatbid: [{ bid: bids }] } })
  t.match(r.body.data, { accepted: 0, rejected: cases.length })
  const { rtb, legacy } = await m.delivered()
  const codes = bySeat(rtb, '/loss')
  for (const [id, , code, min] of cases) t.same(codes[id], { seat: id, code, min }, `${id}: lurl with AUCTION_LOSS ${code}`)
  t.equal(legacy.length, cases.length, 'and a signed bid.lost each')
  t.equal(svc.service.store.bids.getCount(), 0, 'nothing entered the book')
})
