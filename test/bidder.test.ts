import { connect } from 'node:net'
import t from 'tap'
import { signRequest } from '../src/auth/hmac.js'
import { approvedCreative } from './helpers/creatives.js'
import { deviceBody, registerPartner } from './helpers/fleet.js'
import { parseResponses, startTestService, type TestService } from './helpers/service.js'

// The exchange bidder endpoint as an exchange observes it: admission by alias, allowlist, signature and rate limit;
// bids from live campaigns or 204; tmax; win, loss and billing notices reconciled against campaign budgets.

const NOON_UTC = Date.UTC(2026, 10, 23, 12, 0, 0)
const TODAY = '2026-11-23'
const EXCHANGE_IP = '198.51.100.7'

async function exchange (svc: TestService, alias = 'adx', over: Record<string, unknown> = {}) {
  const r = await svc.admin('PUT', `/admin/v1/bidder-aliases/${alias}`, { name: 'Ad Exchange', ip_allowlist: ['198.51.100.0/24', '2001:db8::/32'], require_signature: true, ...over })
  if (r.status !== 201) throw new Error(r.text)
  return r.body.data as { signing_secret: string, endpoint: string }
}

async function buyerWithCampaign (svc: TestService, seatId: string, campaign: Record<string, unknown> = {}) {
  const { key } = await svc.onboard(seatId)
  await svc.admin('PUT', `/admin/v1/seats/${seatId}/rate-limits`, { limits: { campaigns: 100000, creatives: 100000 } })
  await svc.admin('POST', `/admin/v1/seats/${seatId}/approve`)
  const creative = await approvedCreative(svc, key, `${seatId} ad`)
  const c = await svc.request('POST', '/openrtb/v2/campaigns', { key, body: { creative_id: creative, name: `${seatId} campaign`, budget_usd: 100, bid_cpm: 5, pacing: 'asap', start_date: TODAY, end_date: TODAY, targeting: { country: 'US' }, ...campaign } })
  if (c.status !== 201) throw new Error(c.text)
  return { key, creative, campaignId: c.body.data.campaign_id as string }
}

const request = (over: Record<string, unknown> = {}, imp: Record<string, unknown> = {}) => ({
  id: 'req-1',
  at: 1,
  tmax: 150,
  cur: ['USD'],
  imp: [{ id: '1', banner: { w: 1920, h: 1080 }, bidfloor: 2, bidfloorcur: 'USD', qty: { multiplier: 100, sourcetype: 1 }, ...imp }],
  dooh: { id: 'their-screen-1', venuetype: ['2', '205'], venuetypetax: 5 },
  device: { geo: { country: 'USA', region: 'TX', city: 'Austin', lat: 30.27, lon: -97.74 } },
  ...over
})

function post (svc: TestService, secret: string | undefined, body: unknown, opts: { alias?: string, ip?: string, t?: number, signature?: string } = {}) {
  const raw = JSON.stringify(body)
  const headers: Record<string, string> = { 'x-forwarded-for': opts.ip ?? EXCHANGE_IP }
  if (opts.signature !== undefined) headers['x-exchange-signature'] = opts.signature
  else if (secret !== undefined) headers['x-exchange-signature'] = signRequest(secret, opts.t ?? Math.floor(svc.clock.now() / 1000), raw)
  return svc.request('POST', `/openrtb/bidder/${opts.alias ?? 'adx'}/bid`, { raw, headers })
}

const notice = (svc: TestService, url: string, macros: Record<string, string>, ip = EXCHANGE_IP) => {
  let u = url
  for (const [k, v] of Object.entries(macros)) u = u.replace(`\${${k}}`, v)
  return svc.request('GET', new URL(u).pathname + new URL(u).search, { headers: { 'x-forwarded-for': ip } })
}

t.test('an exchange is admitted by alias, allowlist and signature, and gets OpenRTB bids from live campaigns', async (t) => {
  const svc = await startTestService(t, {}, { at: NOON_UTC })
  const { signing_secret: secret, endpoint } = await exchange(svc)
  t.match(secret, /^xsec_/)
  t.match(endpoint, /\/openrtb\/bidder\/adx\/bid$/)
  const b = await buyerWithCampaign(svc, 'brandco')

  const ok = await post(svc, secret, request())
  t.equal(ok.status, 200)
  t.equal(ok.headers.get('x-openrtb-version'), '2.6')
  const res = ok.body
  t.match(res, { id: 'req-1', cur: 'USD', seatbid: [{ seat: 'brandco', bid: [{ impid: '1', price: 5, crid: b.creative, cid: b.campaignId, mtype: 1 }] }] })
  const bid = res.seatbid[0].bid[0]
  t.match(bid.id, /^xb_/)
  t.match(bid.adm, new RegExp(`<img src="[^"]+/assets/${b.creative}"`))
  t.match(bid.nurl, /\/openrtb\/bidder\/adx\/notices\/win\?bid=xb_[^&]+&price=\$\{AUCTION_PRICE\}&mult=\$\{AUCTION_MULTIPLIER\}$/)
  t.match(bid.lurl, /notices\/loss\?bid=.*\$\{AUCTION_LOSS\}/)
  t.match(bid.burl, /notices\/bill\?bid=.*\$\{AUCTION_IMP_TS\}/)

  const noSig = await post(svc, undefined, request())
  t.match(noSig, { status: 401, body: { error_code: 'invalid_signature' } })
  const wrong = await post(svc, 'xsec_wrong', request())
  t.match(wrong, { status: 401, body: { error_code: 'invalid_signature' } }, 'signed with another secret')
  const stale = await post(svc, secret, request(), { t: Math.floor(NOON_UTC / 1000) - 301 })
  t.match(stale, { status: 401, body: { error_code: 'invalid_signature' } }, 'a timestamp more than 5 minutes old')
  const tampered = await post(svc, secret, request(), { signature: signRequest(secret, Math.floor(NOON_UTC / 1000), JSON.stringify(request({ id: 'other' }))) })
  t.equal(tampered.status, 401, 'a signature over another body')

  const outside = await post(svc, secret, request(), { ip: '203.0.113.9' })
  t.match(outside, { status: 403, body: { error_code: 'ip_not_allowed' } })
  const v6 = await post(svc, secret, request(), { ip: '2001:db8::17' })
  t.equal(v6.status, 200, 'an IPv6 address inside an allowed block')
  const unknown = await post(svc, secret, request(), { alias: 'nobody' })
  t.match(unknown, { status: 404, body: { error_code: 'alias_not_found' } })
  const bad = await post(svc, secret, { id: 'x', imp: [] })
  t.match(bad, { status: 400, body: { error_code: 'invalid_bid_request', nbr: 2 } })
  // The ids looked up as our screens are bounded where the request is read (a 100 KB site.id was a 500 from LMDB).
  for (const [param, over] of [['site.id', { site: { id: 's'.repeat(100_000) } }], ['dooh.id', { dooh: { id: 'd'.repeat(100_000) } }], ['device.ifa', { device: { ifa: 'i'.repeat(100_000) } }]] as const) {
    const long = await post(svc, secret, request(over))
    t.match(long, { status: 400, body: { error_code: 'invalid_bid_request', nbr: 2, param } }, `an overlong ${param}`)
  }
  t.equal((await post(svc, secret, request())).status, 200, 'and the exchange is served on')

  t.equal((await svc.admin('GET', '/admin/v1/bidder-aliases/adx')).body.data.signing_secret, undefined, 'the secret is never read back')
  const rotated = (await svc.admin('POST', '/admin/v1/bidder-aliases/adx/rotate-secret', {})).body.data.signing_secret
  t.equal((await post(svc, secret, request())).status, 401, 'the old secret stops verifying')
  t.equal((await post(svc, rotated, request())).status, 200, 'the new one works')
  const badCidr = await svc.admin('PUT', '/admin/v1/bidder-aliases/bad', { name: 'Bad', ip_allowlist: ['10.0.0.0/33'] })
  t.match(badCidr, { status: 400, body: { error_code: 'invalid_parameter', param: 'ip_allowlist.0' } })
  t.equal((await svc.admin('DELETE', '/admin/v1/bidder-aliases/adx')).status, 200)
  t.equal((await post(svc, rotated, request())).body.error_code, 'alias_not_found', 'a deleted alias answers 404')
})

t.test('no-bid is 204: floors, geography, blocks, seat lists, creative fit', async (t) => {
  const svc = await startTestService(t, {}, { at: NOON_UTC })
  const { signing_secret: secret } = await exchange(svc)
  await buyerWithCampaign(svc, 'brandco')
  const noBid = async (body: unknown, what: string) => {
    const r = await post(svc, secret, body)
    t.equal(r.status, 204, what)
    t.equal(r.text, '', `${what}: no body`)
  }
  await noBid(request({}, { bidfloor: 6 }), 'the floor is above every campaign\'s bid_cpm')
  await noBid(request({ device: { geo: { country: 'DEU' } } }), 'outside the targeted country')
  await noBid(request({ bseat: ['brandco'] }), 'the seat is blocked')
  await noBid(request({ wseat: ['someone-else'] }), 'the seat is not on the allowlist')
  await noBid(request({ cur: ['EUR'] }), 'a currency oohbid does not bid in')
  await noBid(request({}, { banner: undefined, video: { mimes: ['video/mp4'], maxduration: 15 } }), 'an image creative does not fit a video-only imp')
  await noBid(request({}, { pmp: { private_auction: 1, deals: [{ id: 'their-deal' }] } }), 'a private auction for deals oohbid holds none of')
  t.equal((await post(svc, secret, request())).status, 200, 'the same request without the obstacle bids')
  t.equal(svc.service.store.exchangeBids.getCount(), 1, 'only bids made are recorded')
})

t.test('tmax: a request whose time budget ran out before it could be answered gets 204', async (t) => {
  const svc = await startTestService(t, {}, { at: NOON_UTC })
  await exchange(svc, 'slow', { require_signature: false, ip_allowlist: ['127.0.0.1'] })
  await buyerWithCampaign(svc, 'brandco')
  const body = JSON.stringify(request({ tmax: 100 }))
  const head = `POST /openrtb/bidder/slow/bid HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`
  const answer = await new Promise<string>((resolve) => {
    const socket = connect(svc.port, '127.0.0.1')
    let out = ''
    socket.on('data', (d) => { out += d.toString() })
    socket.on('connect', () => {
      socket.write(head + body.slice(0, 20))
      setTimeout(() => {
        svc.clock.advance(150) // the exchange's clock runs on while the body trickles in
        socket.write(body.slice(20))
        setTimeout(() => { socket.destroy(); resolve(out) }, 300)
      }, 100)
    })
  })
  t.equal(parseResponses(answer)[0]?.status, 204, 'past tmax: no bid')
  t.equal(svc.service.store.exchangeBids.getCount(), 0, 'and nothing held')
  const fast = await svc.request('POST', '/openrtb/bidder/slow/bid', { raw: body })
  t.equal(fast.status, 200, 'within tmax it bids')
})

t.test('budgets hold while notices are in flight; win, loss and billing notices reconcile them', async (t) => {
  const svc = await startTestService(t, {}, { at: NOON_UTC })
  const { signing_secret: secret } = await exchange(svc)
  // 5 CPM x 100 impressions per play: 0.50 USD a play against a 1.20 USD budget.
  const b = await buyerWithCampaign(svc, 'brandco', { budget_usd: 1.2 })
  const bidOf = async () => {
    const r = await post(svc, secret, request())
    return r.status === 200 ? r.body.seatbid[0].bid[0] : undefined
  }
  const first = await bidOf()
  const second = await bidOf()
  t.ok(first !== undefined && second !== undefined, 'two plays fit the budget')
  t.equal(await bidOf(), undefined, 'a third would not: 204 while the first two hold budget')

  t.equal((await notice(svc, second.lurl, { AUCTION_LOSS: '102', AUCTION_MIN_TO_WIN: '5.5' })).status, 204)
  const third = await bidOf()
  t.ok(third !== undefined, 'a loss releases its hold')

  t.equal((await notice(svc, first.nurl, { AUCTION_PRICE: '4', AUCTION_MULTIPLIER: '80' })).status, 204)
  t.equal((await notice(svc, first.burl, { AUCTION_PRICE: '4', AUCTION_MULTIPLIER: '80', AUCTION_IMP_TS: String(NOON_UTC) })).status, 204)
  t.equal((await notice(svc, first.burl, { AUCTION_PRICE: '4', AUCTION_MULTIPLIER: '80', AUCTION_IMP_TS: String(NOON_UTC) })).status, 204, 'a repeated billing notice is accepted')
  const campaign = (await svc.request('GET', `/openrtb/v2/campaigns/${b.campaignId}`, { key: b.key })).body.data
  t.match(campaign, { spent_usd: 0.32, impressions: 80 }, 'billed once: 4 / 1000 x 80 at the clearing price and confirmed multiplier')
  t.match(svc.service.store.exchangeBids.get(first.id), { status: 'billed', clearing: 4, multiplier: 80 })
  t.match(svc.service.store.exchangeBids.get(second.id), { status: 'lost', loss_code: 102 })

  const overpriced = await notice(svc, third.nurl, { AUCTION_PRICE: '50', AUCTION_MULTIPLIER: '500' })
  t.equal(overpriced.status, 204)
  t.match(svc.service.store.exchangeBids.get(third.id), { status: 'won', clearing: 5, multiplier: 100 }, 'a clearing price above the bid, or more impressions than offered, are clamped')

  const forged = await svc.request('GET', '/openrtb/bidder/adx/notices/win?bid=xb_forged&price=1', { headers: { 'x-forwarded-for': EXCHANGE_IP } })
  t.match(forged, { status: 404, body: { error_code: 'not_found' } })
  const foreign = await svc.request('GET', `/openrtb/bidder/adx/notices/win?bid=${first.id}&price=1`, { headers: { 'x-forwarded-for': '203.0.113.9' } })
  t.match(foreign, { status: 403, body: { error_code: 'ip_not_allowed' } }, 'notices come from the exchange\'s addresses too')

  // A bid no notice settles gives its budget back after an hour.
  const held = () => svc.service.store.ledgers.get(b.campaignId)?.reserved_micros ?? 0
  t.ok(held() > 0)
  svc.clock.advance(3_600_001)
  await svc.service.runJobs()
  t.equal(held(), 0, 'pending holds expire')
  t.match(svc.service.store.exchangeBids.get(third.id), { status: 'expired' }, 'a win that never billed is not charged')

  // An exchange that sends no billing notices: the win notice bills.
  const { signing_secret: plain } = await exchange(svc, 'winonly', { notices: { billing: false } })
  const r = await post(svc, plain, request(), { alias: 'winonly' })
  const w = r.body.seatbid[0].bid[0]
  t.equal(w.burl, undefined, 'no burl when the alias sends no billing notices')
  await notice(svc, w.nurl, { AUCTION_PRICE: '2.5', AUCTION_MULTIPLIER: '100' })
  t.match(svc.service.store.exchangeBids.get(w.id), { status: 'billed', clearing: 2.5 })
  t.equal((await svc.request('GET', `/openrtb/v2/campaigns/${b.campaignId}`, { key: b.key })).body.data.spent_usd, 0.57, '0.32 + 2.5 / 1000 x 100')
})

t.test('even pacing, test requests, our own screens and per-alias rate limits', async (t) => {
  const svc = await startTestService(t, {}, { at: NOON_UTC - 11.5 * 3_600_000 })
  const { signing_secret: secret } = await exchange(svc)
  // Even pacing at 00:30 UTC lets (0.5 h + 1 h lead) / 24 h of the day's 24 USD out: 1.50 USD, three 0.50 plays.
  await buyerWithCampaign(svc, 'steady', { budget_usd: 24, pacing: 'even' })
  let bids = 0
  for (let i = 0; i < 5; i++) if ((await post(svc, secret, request())).status === 200) bids++
  t.equal(bids, 3, 'even pacing holds back the rest of the day')
  const test = await post(svc, secret, request({ test: 1 }))
  t.equal(test.status, 204, 'a test request gets the same decision (paced out)')

  svc.clock.set(NOON_UTC)
  const p = await registerPartner(svc)
  const dev = await svc.request('POST', '/v1/partner/device', { key: p.key, body: deviceBody('ours', { floor_price_cpm: 1 }) })
  const screenId = dev.body.data.screen_id as string
  await buyerWithCampaign(svc, 'pinpoint', { bid_cpm: 9, budget_usd: 1000, targeting: { screen_ids: [screenId] } })
  const ours = await post(svc, secret, request({ dooh: { id: screenId } }))
  t.match(ours.body, { seatbid: [{ seat: 'pinpoint', bid: [{ price: 9 }] }] }, 'a request naming our screen matches screen targeting')
  const theirs = await post(svc, secret, request())
  t.notOk(JSON.stringify(theirs.body).includes('pinpoint'), 'screen targeting never matches a screen oohbid does not know')

  const testBid = await post(svc, secret, request({ test: 1, dooh: { id: screenId } }))
  const record = svc.service.store.exchangeBids.get(testBid.body.seatbid[0].bid[0].id)
  t.match(record, { test: true, reserved_micros: 0 }, 'test=1 bids hold and charge nothing')

  await exchange(svc, 'tiny', { require_signature: false, rate_limit_per_minute: 2 })
  const statuses = []
  for (let i = 0; i < 3; i++) statuses.push((await post(svc, undefined, request(), { alias: 'tiny' })).status)
  t.same(statuses.slice(0, 2).every((s) => s === 200 || s === 204), true)
  t.equal(statuses[2], 429, 'the alias\'s own limit')
})
