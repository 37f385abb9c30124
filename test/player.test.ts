import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import sharp from 'sharp'
import t from 'tap'
import { uploadedCreative } from './helpers/creatives.js'
import { eventually, pause } from './helpers/eventually.js'
import { adImage } from './helpers/media.js'
import { PICKUP_SECONDS, screenWithPlayer, SLOT_SECONDS, type PlayerEvent } from './helpers/player.js'
import { startTestService } from './helpers/service.js'

// The screen player as a screen runs it: the page at embed_url in headless Chromium, against the real service
// (test/player-serving.test.ts has it as buyers see it, test/player-video.test.ts video and closed hours).

const ARTIFACTS = join(process.cwd(), 'artifacts')

t.test('the player page plays an assigned creative within the pickup window, with events, hide(), proofs and outages', async (t) => {
  const svc = await startTestService(t, { PICKUP_SECONDS: String(PICKUP_SECONDS), HEARTBEAT_TIMEOUT_SECONDS: '30' }, { running: true })
  const { key } = await svc.onboard('player_buyer')
  await svc.admin('POST', '/admin/v1/seats/player_buyer/approve')
  const creative = await uploadedCreative(svc, key, await adImage('SPRING SALE', 'Running shoes 30% off', '#248'), 'Spring sale', { click_url: 'https://brand.example/spring' })
  if (creative.status !== 'approved') await svc.admin('POST', `/admin/v1/creatives/${creative.id}/review`, { decision: 'approved', reason: 'checked for the player test' })
  const s = await screenWithPlayer(t, svc)
  t.equal(s.response?.status(), 200)
  t.match(s.response?.headers()['content-type'], /text\/html/)
  t.match(s.response?.headers()['content-security-policy'], /default-src 'none'; script-src 'sha256-/)
  const html = await s.response!.text()
  t.ok(html.length < 20_000, `the page is small: ${html.length} bytes, one request`)
  await s.page.waitForFunction(() => (globalThis as any).oohbid.status().online === true)
  const device = async () => (await svc.request('GET', '/v1/partner/devices', { key: s.partner.key })).body.data.devices[0]
  // The page asks for its first spot and sends its first heartbeat at once; status().online says the feed answered.
  t.match(await eventually(t, 'the screen online', device, { until: (d) => d.status === 'online' }), { status: 'online', player_bound: true }, 'the page\'s heartbeat brought the screen online and bound it to its fp')

  // No dates: the placement starts on the screen's own calendar day, which at 02:00 UTC is still yesterday in Austin.
  const assigned = await svc.request('POST', '/openrtb/v2/campaigns/assign', { key, body: { creative_id: creative.id, screen_ids: [s.screenId], spots_per_day: 5000 } })
  t.equal(assigned.status, 201)
  const assignedAt = Date.now()
  await s.page.waitForFunction((id) => (globalThis as any).__events.some((e: PlayerEvent) => e.name === 'service:ad_started' && e.detail.creative_id === id), creative.id, { timeout: 30_000 })
  const startedAt = (await s.events()).find((e) => e.name === 'service:ad_started' && e.detail.creative_id === creative.id)!.at
  const pickup = (startedAt - assignedAt) / 1000
  t.ok(pickup <= PICKUP_SECONDS + SLOT_SECONDS + 2, `on screen ${pickup.toFixed(1)} s after the assignment (pickup ${PICKUP_SECONDS} s + one slot of ${SLOT_SECONDS} s)`)

  mkdirSync(ARTIFACTS, { recursive: true })
  const shot = join(ARTIFACTS, 'player-playing.png')
  await s.page.screenshot({ path: shot })
  const { channels } = await sharp(shot).stats()
  t.ok(channels.slice(0, 3).some((c) => c.mean > 40), `the screenshot shows the creative, not a black screen (${shot})`)
  t.equal((await s.status()).state, 'playing')

  // Events: each spot starts then ends, in order, with its details; a whole slot is a completed play.
  await s.page.waitForFunction((id) => (globalThis as any).__events.some((e: PlayerEvent) => e.name === 'service:ad_ended' && e.detail.creative_id === id), creative.id, { timeout: 15_000 })
  const events = await s.events()
  const lifecycle = events.filter((e) => e.name !== 'service:overlay_clicked')
  t.ok(lifecycle.every((e, i) => e.name === (i % 2 === 0 ? 'service:ad_started' : 'service:ad_ended') && (i % 2 === 0 || e.detail.spot_id === lifecycle[i - 1]!.detail.spot_id)), 'ad_started and ad_ended alternate, each pair one spot')
  const ours = events.filter((e) => e.detail.creative_id === creative.id)
  t.match(ours[0], { name: 'service:ad_started', detail: { type: 'image', spot_id: /^spt_/, tier: 'guaranteed', duration_seconds: SLOT_SECONDS, offline: false } })
  t.match(ours[1], { name: 'service:ad_ended', detail: { spot_id: ours[0]!.detail.spot_id, completed: true, offline: false } })
  t.ok(Math.abs(ours[1]!.detail.duration_ms - SLOT_SECONDS * 1000) < 500, `played its slot (${ours[1]!.detail.duration_ms} ms)`)

  // The overlay: the creative has a click_url, so the page shows it and reports a click.
  await s.page.waitForSelector('#overlay:not([hidden])')
  await s.page.click('#overlay')
  const click = (await s.events()).find((e) => e.name === 'service:overlay_clicked')
  t.match(click?.detail, { creative_id: creative.id, click_url: 'https://brand.example/spring', spot_id: /^spt_/ })

  // Impressions: each completed play has a proof of play that verifies.
  const proofs: any[] = await eventually(t, 'a proof of the play listed', async () => (await svc.request('GET', `/v1/advertiser/proof/proofs?screen_id=${s.screenId}`, { key })).body.data.proofs, { until: (p) => p.length > 0 })
  t.match(proofs[0], { adId: creative.id, screenId: s.screenId, verification_tier: 'signed', completed: true, givt: { passed: true } }, 'the play has a signed proof')
  t.ok(Math.abs(proofs[0].duration_ms - SLOT_SECONDS * 1000) < 500, 'with the duration the page reported')
  const { signature, timestamp, adId, impressionId, screenId, deviceId } = proofs[0]
  t.match((await svc.request('POST', '/v1/advertiser/proof/verify-proof', { body: { signature, timestamp, adId, impressionId, screenId, deviceId } })).body, { success: true, verification: { valid: true } })

  // hide(): the spot on screen ends at once and is not counted; nothing plays until show().
  const before = (await s.events()).length
  await s.page.evaluate(() => (globalThis as any).oohbid.hide())
  t.equal((await s.status()).state, 'hidden')
  t.equal(await s.page.evaluate(() => (globalThis as any).getComputedStyle((globalThis as any).document.getElementById('stage')).display), 'none', 'the stage is hidden')
  const cut = (await s.events()).slice(before)
  t.ok(cut.every((e) => e.name === 'service:ad_ended' && e.detail.completed === false), 'a spot cut short ends, not completed')
  await pause((SLOT_SECONDS + 1) * 1000)
  t.equal((await s.events()).filter((e, i) => i >= before && e.name === 'service:ad_started').length, 0, 'nothing started while hidden')
  await s.page.evaluate(() => (globalThis as any).oohbid.show())
  await s.page.waitForFunction((n) => (globalThis as any).__events.slice(n).some((e: PlayerEvent) => e.name === 'service:ad_started'), before, { timeout: 5_000 })
  t.equal((await s.status()).state, 'playing', 'show() resumes at once')

  // A feed outage: the page keeps playing what it has, unbilled, and is back on the feed when it returns.
  await s.page.route('**/spots', (route) => route.abort('internetdisconnected'))
  const outageFrom = (await s.events()).length
  await s.page.waitForFunction((n) => (globalThis as any).__events.slice(n).filter((e: PlayerEvent) => e.name === 'service:ad_started' && e.detail.offline).length >= 2, outageFrom, { timeout: 20_000 })
  const outage = (await s.events()).slice(outageFrom).filter((e) => e.name === 'service:ad_started' && e.detail.offline)
  t.match(outage[0]!.detail, { creative_id: creative.id, spot_id: null, offline: true }, 'the last good creative keeps playing through the outage')
  t.equal((await s.status()).online, false)
  await s.page.unroute('**/spots')
  const backFrom = (await s.events()).length
  await s.page.waitForFunction((n) => (globalThis as any).__events.slice(n).some((e: PlayerEvent) => e.name === 'service:ad_started' && !e.detail.offline), backFrom, { timeout: 20_000 })
  t.match(await s.status(), { online: true, pending_reports: 0 }, 'back on the feed')

  // Another device opening the same embed_url is refused; leaving the page takes the screen offline at once. The page
  // leaves by navigating away: the headless build packaged on npm drops what a page sends while it is being closed.
  const other = await svc.request('POST', `${new URL(s.device.embed_url).pathname}/spots`, { body: { fp: 'copied-elsewhere' } })
  t.match(other, { status: 409, body: { error_code: 'device_mismatch', param: 'fp' } })
  await s.page.goto('about:blank')
  t.equal((await eventually(t, 'the screen offline', device, { until: (d) => d.status === 'offline' })).status, 'offline', 'leaving the page took the screen offline (no heartbeat timeout waited for)')
  const offline = svc.service.outbox.read('test', 1000).filter((e) => e.type === 'screen.offline' && e.data.screen_id === s.screenId)
  t.equal(offline.length, 1, 'with one screen.offline event')
})
