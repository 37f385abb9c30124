import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import sharp from 'sharp'
import t, { type Test } from 'tap'
import { startBrowser } from './helpers/browser.js'
import { approvedCreative } from './helpers/creatives.js'
import { deviceBody, registerDevices, registerPartner } from './helpers/fleet.js'
import { startTestService, type TestService } from './helpers/service.js'
import * as validators from '../src/generated/validators.js'

// The operator dashboard as an operator sees it: GET /admin/v1/dashboard's numbers (operator token only, dry runs not
// counted), and the page at /admin/dashboard drawing them in the browser, saved as a screenshot.

const ARTIFACTS = join(process.cwd(), 'artifacts')
const valid = (validators as unknown as Record<string, (data: unknown) => boolean>).Dashboard!

/** A screen, a seat whose accepted bid wins the screen's spot, and that spot decided: one auction won by a bid. */
async function oneAuction (t: Test, svc: TestService) {
  const partner = await registerPartner(svc)
  const ids = await registerDevices(svc, partner, [deviceBody('dash-1', { name: 'Lobby screen', floor_price_cpm: 2, location: { venue_type: 'hotel_lobby' } })])
  const device = (await svc.request('GET', '/v1/partner/devices', { key: partner.key })).body.data.devices[0]
  const { key } = await svc.onboard('dash_buyer')
  await svc.admin('POST', '/admin/v1/seats/dash_buyer/approve')
  const creative = await approvedCreative(svc, key, 'Dashboard ad')
  const request = (await svc.request('GET', '/openrtb/v2/adslots?format=openrtb&limit=10', { key })).body.data.bid_requests.find((r: any) => r.ext.trb.screen_id === ids['dash-1'])
  const bid = await svc.request('POST', '/openrtb/v2/bid', { key, body: { id: 'r1', seatbid: [{ bid: [{ id: 'b1', impid: request.imp[0].id, price: 5, crid: creative, adm: '<b>ad</b>' }] }] } })
  t.equal(bid.body.data.accepted, 1, 'the bid is accepted', { results: bid.body.data.results })
  const embed = new URL(device.embed_url).pathname
  t.match(await svc.request('POST', `${embed}/spots?dry_run=true`, { body: {} }), { status: 200, body: { dry_run: true } }, 'a dry run decides nothing that counts')
  const spot = await svc.request('POST', `${embed}/spots`, { body: {} })
  t.equal(spot.body.data.tier, 'open_auction')
}

t.test('GET /admin/v1/dashboard: operator only, every hot thread counted, and schema-valid', async (t) => {
  const svc = await startTestService(t)
  t.match(await svc.request('GET', '/admin/v1/dashboard'), { status: 401, body: { error_code: 'authentication_required' } })
  const { key } = await svc.onboard('not_operator')
  t.match(await svc.request('GET', '/admin/v1/dashboard', { key }), { status: 401 }, 'a seat key is not the operator token')
  await oneAuction(t, svc)
  const r = await svc.admin('GET', '/admin/v1/dashboard')
  t.equal(r.status, 200)
  t.ok(valid(r.body.data), 'matches the Dashboard schema')
  t.match(r.body.data, {
    spots: { open_auction: 1, guaranteed: 0, house: 0, closed: 0 },
    bids: { accepted: 1, rejected: 0, won: 1 },
    top_screens: [{ name: 'Lobby screen', spots: 1 }],
    moderation_queue: 0,
    clickhouse: { pending_events: Number }
  })
  t.ok(r.body.data.bid_latency.count >= 1, 'the bid is in the latency histogram')
})

t.test('the dashboard page draws the numbers in the browser and refreshes', async (t) => {
  const svc = await startTestService(t)
  await oneAuction(t, svc)
  const browser = await startBrowser(t)
  const page = await browser.newPage({ viewport: { width: 1200, height: 760 } })
  const response = await page.goto(`${svc.url}/admin/dashboard`)
  t.equal(response?.status(), 200)
  await page.waitForSelector('#login:not([hidden])')
  t.same(await page.evaluate(() => ({ login: (globalThis as any).document.getElementById('login').hidden, cards: (globalThis as any).document.getElementById('cards').hidden })), { login: false, cards: true }, 'without a token the page asks for one, and shows no numbers')
  await page.goto(`${svc.url}/admin/dashboard#token=${svc.adminToken}`)
  await page.waitForFunction(() => Number((globalThis as any).document.body.dataset.polls ?? 0) >= 2, undefined, { timeout: 15_000 })
  t.notMatch(page.url(), /token/, 'the token leaves the address bar')
  t.match(await page.textContent('#status'), /1 spots decided, 1 bids accepted/)
  t.equal(await page.textContent('#fill-rate'), '100.0%', 'the one spot was won by a bid')
  t.equal(await page.textContent('#win-rate'), '100.0%')
  t.match(await page.textContent('#top-screens'), /Lobby screen1 spots/)
  t.equal(await page.locator('#spots-chart polyline').count(), 1, 'charts are drawn')
  mkdirSync(ARTIFACTS, { recursive: true })
  const shot = join(ARTIFACTS, 'dashboard.png')
  await page.screenshot({ path: shot, fullPage: true })
  const { width, height } = await sharp(shot).metadata()
  t.ok(width === 1200 && height! >= 760, `screenshot saved: ${shot} (${width} x ${height})`)
})
