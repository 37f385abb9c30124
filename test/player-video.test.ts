import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { uploadedCreative } from './helpers/creatives.js'
import { eventually } from './helpers/eventually.js'
import { adImage, adVideo } from './helpers/media.js'
import { screenWithPlayer, type PlayerEvent } from './helpers/player.js'
import { startTestService } from './helpers/service.js'

// The screen player in headless Chromium, continued (test/player.test.ts): video, and a screen outside its hours.
// A file of its own so that each file's browser tests finish well inside the runner's per-file time limit.

t.test('video plays too, muted and inline, for its slot', async (t) => {
  const svc = await startTestService(t, { PICKUP_SECONDS: '1' }, { running: true })
  const { key } = await svc.onboard('player_video')
  const dir = mkdtempSync(join(tmpdir(), 'oohbid-player-video-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  writeFileSync(join(dir, 'card.png'), await adImage('SUMMER FILM', 'In cinemas Friday', '#135'))
  await adVideo(join(dir, 'card.png'), join(dir, 'ad.mp4'), 5)
  const creative = await uploadedCreative(svc, key, readFileSync(join(dir, 'ad.mp4')), 'Film trailer', {}, 'video/mp4')
  if (creative.status !== 'approved') await svc.admin('POST', `/admin/v1/creatives/${creative.id}/review`, { decision: 'approved', reason: 'checked for the player test' })
  const s = await screenWithPlayer(t, svc, 'video-screen-fp')
  t.equal((await svc.request('POST', '/openrtb/v2/campaigns/assign', { key, body: { creative_id: creative.id, screen_ids: [s.screenId], spots_per_day: 2000 } })).status, 201)
  await s.page.waitForFunction((id) => (globalThis as any).__events.some((e: PlayerEvent) => e.name === 'service:ad_started' && e.detail.creative_id === id), creative.id, { timeout: 20_000 })
  const started = (await s.events()).find((e) => e.name === 'service:ad_started' && e.detail.creative_id === creative.id)!
  t.match(started.detail, { type: 'video', tier: 'guaranteed' })
  const playing = () => s.page.evaluate(() => { const v = (globalThis as any).document.querySelector('#stage video'); return v === null ? null : { time: v.currentTime as number, paused: v.paused as boolean, muted: v.muted as boolean } })
  const video = await eventually(t, 'the video half a second in', playing, { until: (v) => v !== null && v.time > 0.5 })
  t.ok(video !== null && video.time > 0.5 && !video.paused && video.muted, `the video is playing (${JSON.stringify(video)})`)
  await s.page.waitForFunction((id) => (globalThis as any).__events.some((e: PlayerEvent) => e.name === 'service:ad_ended' && e.detail.creative_id === id), creative.id, { timeout: 15_000 })
  const ended = (await s.events()).find((e) => e.name === 'service:ad_ended' && e.detail.creative_id === creative.id)!
  t.match(ended.detail, { spot_id: started.detail.spot_id, completed: true }, 'and ends with its slot, completed')
})

t.test('outside its operating hours the screen stays dark and says closed', async (t) => {
  const svc = await startTestService(t, {}, { running: true })
  // Open one hour a day, six hours from now in Austin.
  const hour = (Number(new Intl.DateTimeFormat('en-US', { hour: 'numeric', hourCycle: 'h23', timeZone: 'America/Chicago' }).format(new Date())) + 6) % 24
  const open = Math.min(hour, 22)
  const window = [[`${String(open).padStart(2, '0')}:00`, `${String(open + 1).padStart(2, '0')}:00`]]
  const s = await screenWithPlayer(t, svc, 'closed-fp', { operating_hours: Object.fromEntries(['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'].map((d) => [d, window])) })
  await s.page.waitForFunction(() => (globalThis as any).oohbid.status().state === 'closed', undefined, { timeout: 10_000 })
  t.match(await s.status(), { state: 'closed', online: true, spot_id: null })
  t.equal(await s.page.evaluate(() => (globalThis as any).document.querySelector('#stage').children.length), 0, 'nothing on screen')
  t.equal((await s.events()).length, 0, 'and no ad events')
})
