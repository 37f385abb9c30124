import t from 'tap'
import { approvedCreative, unapprovedCreative } from './helpers/creatives.js'
import { eventually } from './helpers/eventually.js'
import { startTestService } from './helpers/service.js'
import { ScreenClaims } from '../src/bidding/auction/claims.js'
import { bySeat, market, MONDAY_NOON_AUSTIN } from './helpers/auction-market.js'

// The waterfall a screen's player runs for each spot, as buyers and players observe it: who wins, what they pay, the
// notices each bid gets (nurl, lurl, burl with their macros; signed legacy POSTs), billing at play time, stats.
// This file: losses and their codes, sandbox and closed screens, decisions that meet on one screen, nurl retries.

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
