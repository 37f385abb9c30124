import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { bookKey } from '../src/bidding/book.js'
import { assetServer } from './helpers/asset-server.js'
import { approvedCreative, unapprovedCreative } from './helpers/creatives.js'
import { adImage } from './helpers/media.js'
import { deviceBody, registerDevices, registerPartner, sendAudience } from './helpers/fleet.js'
import { startTestService, type TestService } from './helpers/service.js'

const FIXTURES = join(process.cwd(), 'test', 'fixtures', 'openrtb')

async function setup (svc: TestService, seatId = 'bidder', approve = true) {
  const p = await registerPartner(svc)
  const ids = await registerDevices(svc, p, [deviceBody('floor-5', { floor_price_cpm: 5 }), deviceBody('floor-12', { floor_price_cpm: 12 })])
  await sendAudience(svc, p, [{ device_id: 'floor-5', live_face_count: 6, attention_score: 0.5 }])
  const { key } = await svc.onboard(seatId)
  await svc.admin('PUT', `/admin/v1/seats/${seatId}/rate-limits`, { limits: { inventory: 100000, bidding: 100000 } })
  if (approve) await svc.admin('POST', `/admin/v1/seats/${seatId}/approve`)
  const creative = await approvedCreative(svc, key)
  const requests = (await svc.request('GET', '/openrtb/v2/adslots?format=openrtb&limit=10', { key })).body.data.bid_requests as any[]
  const imp = (screen: string) => requests.find((r) => r.ext.trb.screen_id === ids[screen]).imp[0].id as string
  return { p, ids, key, creative, imp }
}

const response = (bids: Array<Record<string, unknown>>, extra: Record<string, unknown> = {}) => ({ id: 'resp-1', seatbid: [{ bid: bids }], ...extra })

t.test('a bid with a new crid and its image in the markup registers the creative; once moderated, the crid bids normally', async (t) => {
  const svc = await startTestService(t, { ALLOW_PRIVATE_ASSET_URLS: 'true' })
  const s = await setup(svc)
  const base = await assetServer(t, { '/spring.png': { body: await adImage('SPRING SALE', 'Fresh fruit, every day'), type: 'image/png' } })
  const adm = `<a href="https://brand.example/spring"><img src="${base}/spring.png" width="1920" height="1080"></a>`
  const first = await svc.request('POST', '/openrtb/v2/bid', { key: s.key, body: response([
    { id: 'new-crid', impid: s.imp('floor-5'), price: 7, adm, crid: 'dsp-spring-1', adomain: ['brand.example'] },
    { id: 'cheap-and-new', impid: s.imp('floor-12'), price: 3, adm: `${base}/spring.png`, crid: 'dsp-spring-2' }
  ]) })
  t.equal(first.status, 200)
  const [fresh, cheap] = first.body.data.results
  t.match(fresh, { status: 'rejected', reason: 'creative_blocked', detail: /crid dsp-spring-1 is new: its image\/png from the markup is registered as creative cr_[0-9a-f]{32} and sent to moderation/, creative_id: /^cr_/, stored: false })
  t.same(fresh.reasons.map((r: { loss: number }) => r.loss), [201], 'one reason: the creative is pending (OpenRTB loss 201)')
  t.match(cheap, { reason: 'below_floor', floor: 12, creative_id: /^cr_/ })
  t.same(cheap.reasons.map((r: { reason: string, loss: number }) => [r.reason, r.loss]), [['below_floor', 100], ['creative_blocked', 201]], 'every reason, the floor first')
  const made = await svc.request('GET', `/openrtb/v2/creatives/${fresh.creative_id}`, { key: s.key })
  t.match(made.body.data, { creative_id: fresh.creative_id, crid: 'dsp-spring-1', status: 'pending_moderation', content_type: 'image/png', mode: 'url', source_url: `${base}/spring.png`, advertiser_domain: 'brand.example' })
  const again = await svc.request('POST', '/openrtb/v2/bid', { key: s.key, body: response([{ id: 'too-soon', impid: s.imp('floor-5'), price: 7, adm, crid: 'dsp-spring-1' }]) })
  t.match(again.body.data.results[0], { reason: 'creative_blocked', creative_id: fresh.creative_id, reasons: [{ loss: 201, detail: /is pending_moderation/ }] }, 'the same crid, before moderation: pending, not registered twice')
  await svc.service.moderator.idle()
  t.match((await svc.request('GET', `/openrtb/v2/creatives/${fresh.creative_id}`, { key: s.key })).body.data, { status: 'approved', asset: { media_type: 'image/png', width: Number } }, 'moderated by the same pipeline as POST /creatives')
  const next = await svc.request('POST', '/openrtb/v2/bid', { key: s.key, body: response([{ id: 'now-ok', impid: s.imp('floor-5'), price: 7, adm, crid: 'dsp-spring-1' }]) })
  t.match(next.body.data, { accepted: 1, results: [{ status: 'accepted', creative_id: fresh.creative_id, stored: true }] })
  t.equal(svc.service.store.bids.get(bookKey(s.ids['floor-5']!, s.imp('floor-5'), 'bidder'))?.creative_id, fresh.creative_id, 'the stored bid plays the registered creative')
  const list = (await svc.request('GET', '/openrtb/v2/creatives', { key: s.key })).body.data.creatives
  t.equal(list.filter((c: { crid?: string }) => c.crid !== undefined).length, 2, 'two crids, two creatives, listed with the seat\'s others')
  const rival = await setup(svc, 'rival')
  const theirs = await svc.request('POST', '/openrtb/v2/bid', { key: rival.key, body: response([{ id: 'same-crid', impid: rival.imp('floor-5'), price: 7, adm, crid: 'dsp-spring-1' }]) })
  t.not(theirs.body.data.results[0].creative_id, fresh.creative_id, 'another seat\'s equal crid is its own creative')
  const noAsset = await svc.request('POST', '/openrtb/v2/bid', { key: s.key, body: response([{ id: 'script', impid: s.imp('floor-5'), price: 7, adm: '<script src="https://dsp.example/tag.js"></script>', crid: 'dsp-tag' }]) })
  t.match(noAsset.body.data.results[0], { reason: 'creative_blocked', detail: /carries no image or video URL/, reasons: [{ loss: 202 }] }, 'markup without an asset registers nothing')
  t.equal((await svc.request('GET', '/openrtb/v2/creatives', { key: s.key })).body.data.creatives.length, 3, 'the seat\'s own approved creative and the two registered')
})

t.test('accepted bids of a production seat are stored for the waterfall; each rejection reason', async (t) => {
  const svc = await startTestService(t)
  const s = await setup(svc)
  const other = await setup(svc, 'rival')
  const pending = await unapprovedCreative(svc, s.key)
  const screen5 = s.ids['floor-5']!
  await svc.request('PATCH', `/v1/partner/screens/${s.ids['floor-12']}`, { key: s.p.key, body: { blocked_advertisers: ['blocked.example'], blocked_categories: ['IAB9'] } })
  const bids = [
    { id: 'ok', impid: s.imp('floor-5'), price: 7.5, adm: '<img src="https://cdn.example/a.png">', crid: s.creative, adomain: ['brand.example'] },
    { id: 'cheap', impid: s.imp('floor-12'), price: 11.99, nurl: 'https://dsp.example/win', crid: s.creative },
    { id: 'no-markup', impid: s.imp('floor-5'), price: 9, crid: s.creative },
    { id: 'unregistered', impid: s.imp('floor-5'), price: 9, adm: 'x', crid: 'their-own-creative' },
    { id: 'unapproved', impid: s.imp('floor-5'), price: 9, adm: 'x', crid: pending },
    { id: 'blocked-domain', impid: s.imp('floor-12'), price: 20, adm: 'x', crid: s.creative, adomain: ['ads.blocked.example'] },
    { id: 'blocked-cat', impid: s.imp('floor-12'), price: 20, adm: 'x', crid: s.creative, cat: ['IAB9-7'] },
    { id: 'forged', impid: 'not-an-imp', price: 9, adm: 'x', crid: s.creative },
    { id: 'someone-elses', impid: other.imp('floor-5'), price: 9, adm: 'x', crid: s.creative },
    { id: 'no-such-deal', impid: s.imp('floor-5'), price: 9, adm: 'x', crid: s.creative, dealid: 'nope' }
  ]
  const r = await svc.request('POST', '/openrtb/v2/bid', { key: s.key, body: response(bids) })
  t.equal(r.status, 200)
  t.match(r.body.data, { id: 'resp-1', sandbox: false, accepted: 1, rejected: 9 })
  const byId = Object.fromEntries(r.body.data.results.map((x: any) => [x.bid_id, x]))
  t.match(byId.ok, { status: 'accepted', screen_id: screen5, price: 7.5, floor: 5, stored: true })
  t.match(byId.cheap, { status: 'rejected', reason: 'below_floor', price: 11.99, floor: 12, stored: false })
  t.match(byId['no-markup'], { reason: 'missing_adm_and_nurl' })
  t.match(byId.unregistered, { reason: 'creative_blocked', detail: /crid their-own-creative is not a creative of this seat, and its markup carries no image or video URL/, reasons: [{ reason: 'creative_blocked', loss: 202 }] })
  t.match(byId.unapproved, { reason: 'creative_blocked', detail: /awaiting_upload/ })
  t.match(byId['blocked-domain'], { reason: 'creative_blocked', detail: /advertiser ads\.blocked\.example/ })
  t.match(byId['blocked-cat'], { reason: 'creative_blocked', detail: /category IAB9-7/ })
  t.match(byId.forged, { reason: 'unknown_imp' })
  t.match(byId['someone-elses'], { reason: 'unknown_imp' }, 'an imp issued to another seat')
  t.match(byId['no-such-deal'], { reason: 'invalid_deal' })
  const stored = [...svc.service.store.bids.getRange()].map(({ value }) => value)
  t.match(stored, [{ bid_id: 'ok', seat_id: 'bidder', screen_id: screen5, price: 7.5, creative_id: s.creative, adomain: ['brand.example'] }])
  const usd = await svc.request('POST', '/openrtb/v2/bid', { key: s.key, body: response([bids[0]!], { cur: 'EUR' }) })
  t.match(usd.body.data.results, [{ reason: 'currency_not_supported' }])
  svc.clock.advance(301_000)
  const late = await svc.request('POST', '/openrtb/v2/bid', { key: s.key, body: response([bids[0]!]) })
  t.match(late.body.data.results, [{ reason: 'imp_expired', screen_id: screen5 }])
})

t.test('sandbox seats are scored only; a deal prices the bid', async (t) => {
  const svc = await startTestService(t)
  const s = await setup(svc, 'sandboxed', false)
  const bid = { id: 'b', impid: s.imp('floor-5'), price: 6, adm: 'x', crid: s.creative }
  const r = await svc.request('POST', '/openrtb/v2/bid', { key: s.key, body: response([bid]) })
  t.match(r.body.data, { sandbox: true, accepted: 1, results: [{ status: 'accepted', stored: false }] })
  t.equal(svc.service.store.bids.getCount(), 0, 'nothing enters the waterfall')
  const today = new Date(svc.clock.now()).toISOString().slice(0, 10)
  // Deals run by the screen's own calendar: from yesterday covers an Austin screen at any hour.
  const yesterday = new Date(svc.clock.now() - 86_400_000).toISOString().slice(0, 10)
  await svc.request('POST', '/openrtb/v2/deals/propose', { key: s.key, body: { deal_id: 'pref-1', type: 'Preferred', floor_cpm: 6, fixed_cpm: 7, start_date: yesterday, end_date: today } })
  await svc.admin('POST', '/admin/v1/deals/pref-1/approve')
  const withDeal = await svc.request('POST', '/openrtb/v2/bid', { key: s.key, body: response([{ ...bid, dealid: 'pref-1' }, { ...bid, id: 'c', price: 7, dealid: 'pref-1' }]) })
  t.match(withDeal.body.data.results, [{ reason: 'below_floor', floor: 7 }, { status: 'accepted', dealid: 'pref-1', floor: 7 }], 'the deal\'s fixed price is the floor')
})

t.test('OpenRTB 2.6 corpora: every real-world-shaped response is accepted, every malformed one is 400 with nbr', async (t) => {
  const svc = await startTestService(t)
  const s = await setup(svc)
  const impid = s.imp('floor-5')
  const load = (dir: string, name: string) => JSON.parse(readFileSync(join(FIXTURES, dir, name), 'utf8').replaceAll('IMPID', impid).replaceAll('CRID', s.creative))
  const valid = readdirSync(join(FIXTURES, 'valid'))
  t.ok(valid.length >= 20, `${valid.length} valid responses`)
  for (const name of valid) {
    const body = load('valid', name)
    const r = await svc.request('POST', '/openrtb/v2/bid', { key: s.key, body })
    t.equal(r.status, 200, name)
    const bids = body.seatbid.reduce((n: number, sb: { bid: unknown[] }) => n + sb.bid.length, 0)
    t.match(r.body.data, { accepted: bids, rejected: 0 }, `${name}: every bid accepted`)
  }
  const before = svc.snapshot()
  const invalid = readdirSync(join(FIXTURES, 'invalid'))
  for (const name of invalid) {
    const r = await svc.request('POST', '/openrtb/v2/bid', { key: s.key, body: load('invalid', name) })
    t.equal(r.status, 400, name)
    t.match(r.body, { error_code: 'invalid_bid_response', nbr: 2, request_id: /^req_/ }, name)
  }
  const bad = await svc.request('POST', '/openrtb/v2/bid', { key: s.key, raw: '{"id": "r", "seatbid": [' })
  t.match(bad.body, { error_code: 'invalid_bid_response', nbr: 2 }, 'malformed JSON too')
  t.same(svc.snapshot(), before, 'nothing written')
  t.equal((await svc.request('GET', '/healthz')).status, 200)
})

t.test('stats add up: 24 hours of bids, acceptance, reasons, latency and rates', async (t) => {
  const svc = await startTestService(t)
  const s = await setup(svc)
  const ok = { id: 'a', impid: s.imp('floor-5'), price: 8, adm: 'x', crid: s.creative }
  svc.clock.advance(40)
  await svc.request('POST', '/openrtb/v2/bid', { key: s.key, body: response([ok, { ...ok, id: 'b', price: 6 }, { ...ok, id: 'c', price: 2 }]) })
  svc.clock.advance(60)
  await svc.request('POST', '/openrtb/v2/bid', { key: s.key, body: response([{ ...ok, id: 'd', impid: s.imp('floor-12'), price: 10 }, { ...ok, id: 'e', crid: 'unknown' }]) })
  await svc.request('POST', '/openrtb/v2/bid', { key: s.key, body: { id: 'malformed' } })
  await svc.request('POST', '/openrtb/v2/bid', { key: s.key, raw: '{"not": "a bid response"}' })
  const stats = (await svc.request('GET', '/openrtb/v2/stats', { key: s.key })).body.data
  t.match(stats, {
    bid_responses: 3, bids: 5, accepted: 2, rejected: 3, rejected_by_reason: { below_floor: 2, creative_blocked: 1 }, wins: 0, spend_usd: 0,
    fill_rate: 0.4, win_rate: 0, avg_bid_cpm: 7, avg_latency_ms: 40, max_latency_ms: 40
  })
  t.equal(stats.hourly.length, 24)
  t.equal(stats.hourly.reduce((n: number, h: { bids: number }) => n + h.bids, 0), 5, 'the hours add up to the total')
  svc.clock.advance(25 * 3_600_000)
  t.match((await svc.request('GET', '/openrtb/v2/stats', { key: s.key })).body.data, { bids: 0, fill_rate: null, avg_latency_ms: null }, 'a day later the window is empty')
  const sandbox = await svc.onboard('nostats')
  t.match((await svc.request('GET', '/openrtb/v2/stats', { key: sandbox.key })).body.data, { bids: 0 })
})
