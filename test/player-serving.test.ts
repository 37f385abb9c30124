import t from 'tap'
import { startBrowser } from './helpers/browser.js'
import { uploadedCreative } from './helpers/creatives.js'
import { eventually } from './helpers/eventually.js'
import { deviceBody, registerDevices, registerPartner } from './helpers/fleet.js'
import { adImage } from './helpers/media.js'
import { PICKUP_SECONDS, RECORD, screenWithPlayer, SLOT_SECONDS, type PlayerEvent } from './helpers/player.js'
import { startReceiver } from './helpers/receiver.js'
import { startTestService } from './helpers/service.js'

// The screen player as buyers see it (test/player.test.ts has the page itself): a bid it plays billed, and a buyer's
// way from zero to serving, in headless Chromium against the real service.

t.test('a bid the page plays is billed: nurl at the auction, burl with the price once the page reports the play, whatever the screen\'s clock says', async (t) => {
  const receiver = await startReceiver(t)
  const svc = await startTestService(t, { ALLOW_PRIVATE_CALLBACK_URLS: '1' }, { running: true })
  // This screen's clock is ten minutes behind the service's: its reports must still land.
  svc.clock.advance(10 * 60_000)
  const { key } = await svc.onboard('player_bidder')
  await svc.admin('POST', '/admin/v1/seats/player_bidder/approve')
  const creative = await uploadedCreative(svc, key, await adImage('COFFEE', 'Two for one until noon', '#630'), 'Coffee')
  if (creative.status !== 'approved') await svc.admin('POST', `/admin/v1/creatives/${creative.id}/review`, { decision: 'approved', reason: 'checked for the player test' })
  const partner = await registerPartner(svc)
  await registerDevices(svc, partner, [deviceBody('bid-screen', { slot_duration_seconds: SLOT_SECONDS, floor_price_cpm: 4 })])
  const request = (await svc.request('GET', '/openrtb/v2/adslots?format=openrtb&limit=1', { key })).body.data.bid_requests[0]
  const bid = { id: 'b-1', impid: request.imp[0].id, price: 9, crid: creative.id, adm: '<b>coffee</b>', nurl: `${receiver.url}/win?p=\${AUCTION_PRICE}`, burl: `${receiver.url}/bill?p=\${AUCTION_PRICE}&ts=\${AUCTION_IMP_TS}` }
  t.match((await svc.request('POST', '/openrtb/v2/bid', { key, body: { id: request.id, seatbid: [{ bid: [bid] }] } })).body.data, { accepted: 1 })
  const device = (await svc.request('GET', '/v1/partner/devices', { key: partner.key })).body.data.devices[0]
  const browser = await startBrowser(t)
  const page = await browser.newPage()
  await page.addInitScript(RECORD)
  await page.goto(`${device.embed_url}?fp=bid-screen-fp`)
  await page.waitForFunction((id) => (globalThis as any).__events.some((e: PlayerEvent) => e.name === 'service:ad_ended' && e.detail.creative_id === id && e.detail.completed), creative.id, { timeout: 20_000 })
  // The page fires ad_ended as it sends its report: the play is billed once that report has landed.
  await eventually(t, 'the billing notice at the receiver', async () => {
    await svc.service.sender.idle()
    return receiver.received.some((r) => r.path === '/bill')
  })
  const win = receiver.received.find((r) => r.path === '/win')
  const bill = receiver.received.find((r) => r.path === '/bill')
  t.equal(win?.query.get('p'), '4.01', 'the win notice carries the clearing price (second price: the floor plus 0.01)')
  t.equal(bill?.query.get('p'), '4.01', 'the billing notice fires once the page reported the completed play')
  t.ok(Number(bill?.query.get('ts')) > 0, 'with the play time')
})

t.test('zero to serving, end to end: onboard, browse, upload, moderation, campaign, assign, play', async (t) => {
  const svc = await startTestService(t, { PICKUP_SECONDS: String(PICKUP_SECONDS) }, { running: true })
  // A screen operator's device is up, its player page open.
  const s = await screenWithPlayer(t, svc, 'lobby-screen-fp')
  await s.page.waitForFunction(() => (globalThis as any).oohbid.status().online === true)
  // A buyer onboards and browses inventory.
  const { reply, key } = await svc.onboard('zero_to_serving')
  t.equal(reply.status, 201)
  const slots = (await svc.request('GET', '/openrtb/v2/adslots?limit=50', { key })).body.data
  t.ok(slots.screens.some((x: any) => x.screen_id === s.screenId), 'the screen is in /adslots')
  // Uploads a creative, which the models moderate.
  const creative = await uploadedCreative(svc, key, await adImage('FRESH BREAD', 'Baked daily on Main St', '#a52'), 'Bakery')
  t.equal(creative.status, 'approved', 'moderation approved the creative on its own')
  // Creates a campaign and assigns the creative to the screen.
  const today = new Date().toISOString().slice(0, 10)
  const campaign = await svc.request('POST', '/openrtb/v2/campaigns', { key, body: { creative_id: creative.id, name: 'Bakery launch', budget_usd: 50, start_date: today, end_date: today } })
  t.equal(campaign.status, 201)
  const assign = await svc.request('POST', '/openrtb/v2/campaigns/assign', { key, body: { creative_id: creative.id, campaign_id: campaign.body.data.campaign_id, screen_ids: [s.screenId], spots_per_day: 2000 } })
  t.equal(assign.status, 201)
  const assignedAt = Date.now()
  // The screen plays it within the pickup window, and the play counts for the campaign.
  await s.page.waitForFunction((id) => (globalThis as any).__events.some((e: PlayerEvent) => e.name === 'service:ad_ended' && e.detail.creative_id === id && e.detail.completed), creative.id, { timeout: 30_000 })
  const started = (await s.events()).find((e) => e.name === 'service:ad_started' && e.detail.creative_id === creative.id)!
  t.ok((started.at - assignedAt) / 1000 <= PICKUP_SECONDS + SLOT_SECONDS + 2, `playing ${((started.at - assignedAt) / 1000).toFixed(1)} s after the assignment`)
  const impressions = await eventually(t, 'the campaign counts an impression', async () => (await svc.request('GET', `/openrtb/v2/campaigns/${campaign.body.data.campaign_id}`, { key })).body.data.impressions as number, { until: (n) => n >= 1 })
  t.ok(impressions >= 1, 'the campaign counts the play')
  const proofs = (await svc.request('GET', `/v1/advertiser/proof/proofs?screen_id=${s.screenId}`, { key })).body.data.proofs
  t.match(proofs[0], { adId: creative.id, verification_tier: 'signed', completed: true }, 'with its proof of play')
  t.ok(svc.service.outbox.read('test', 1000).some((e) => e.type === 'campaign.started' && e.data.campaign_id === campaign.body.data.campaign_id), 'campaign.started')
})
