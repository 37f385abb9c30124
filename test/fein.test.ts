import t from 'tap'
import { applyUpdate, emptyFein, present, quality, vas7d } from '../src/inventory/fein.js'
import { buyer, deviceBody, registerDevices, registerPartner, sendAudience } from './helpers/fleet.js'
import { startTestService } from './helpers/service.js'

const DAY = 86_400_000

t.test('each signal is live for its freshness window and null after it', async (t) => {
  const t0 = Date.UTC(2026, 0, 10, 12, 0, 0)
  const s = applyUpdate(emptyFein(), { device_id: 'd', live_face_count: 7, attention_score: 0.6, dominant_emotion: 'happy', crowd_density: 40, purchase_intent: 'high', ad_receptivity: 0.4, income_level: 'high', dwell_time_ms: 9000 }, t0)
  t.match(present(s, true, t0 + 10_000), { live_face_count: 7, attention_score: 0.6, dominant_emotion: 'happy', crowd_density: 40, purchase_intent: 'high', data_quality: 'live' }, 'at 10 s everything is live')
  const at11 = present(s, true, t0 + 10_001)
  t.match(at11, { live_face_count: null, attention_score: null, dominant_emotion: null, crowd_density: null, purchase_intent: 'high', ad_receptivity: 0.4, dwell_time_ms: 9000, income_level: 'high', data_quality: 'none' }, '10-second signals expire; 30-second ones stay')
  t.match(present(s, true, t0 + 30_001), { purchase_intent: null, ad_receptivity: null, dwell_time_ms: null, income_level: 'high' })
  t.match(present(s, true, t0 + 3_600_001), { income_level: null, last_updated: new Date(t0).toISOString() })
  t.equal(present(s, false, t0).data_quality, 'none', 'no sensors, no data quality')
  t.equal(present(s, false, t0).live_face_count, null)
})

t.test('vas_7d is a 7-day average per play, days weighted 7 (today) to 1 (six days ago)', async (t) => {
  const t0 = Date.UTC(2026, 0, 10, 12, 0, 0)
  let s = emptyFein()
  s = applyUpdate(s, { device_id: 'd', vas_seconds: 99, vas_plays: 1 }, t0 - 7 * DAY - 3_600_000)
  s = applyUpdate(s, { device_id: 'd', vas_seconds: 10, vas_plays: 1 }, t0 - 6 * DAY)
  s = applyUpdate(s, { device_id: 'd', vas_seconds: 40, vas_plays: 2 }, t0 - DAY)
  s = applyUpdate(s, { device_id: 'd', vas_seconds: 5, vas_plays: 1 }, t0)
  t.equal(vas7d(s, t0), 14.25, '(1x10 + 12x20 + 7x5) / 20; the 8-day-old sample is gone')
  t.equal(quality(s, true, t0 + 20_000), 'historical', 'VAS history without live signals')
  t.equal(vas7d(emptyFein(), t0), null)
})

t.test('over HTTP: live, then historical in the adslots order once the signals go stale', async (t) => {
  const svc = await startTestService(t)
  const p = await registerPartner(svc)
  const ids = await registerDevices(svc, p, [deviceBody('live'), deviceBody('hist'), deviceBody('none', { capabilities: { fein: false } })])
  const key = await buyer(svc)
  await sendAudience(svc, p, [{ device_id: 'hist', vas_seconds: 18, vas_plays: 2 }, { device_id: 'live', live_face_count: 5, attention_score: 0.8, vas_seconds: 3, vas_plays: 1 }])
  const order = async () => (await svc.request('GET', '/openrtb/v2/adslots', { key })).body.data.screens.map((s: { screen_id: string, data_quality: string, vas_7d: number | null }) => [s.screen_id, s.data_quality, s.vas_7d])
  t.same(await order(), [[ids.live, 'live', 3], [ids.hist, 'historical', 9], [ids.none, 'none', null]], 'live first, then historical, then none')
  svc.clock.advance(10_001)
  await svc.service.runJobs()
  t.same(await order(), [[ids.hist, 'historical', 9], [ids.live, 'historical', 3], [ids.none, 'none', null]], 'stale signals are not presented as live; VAS orders the rest')
  const profile = await svc.request('GET', `/openrtb/v2/screens/${ids.live}`, { key })
  t.match(profile.body.data.attention.fein, { live_face_count: null, attention_score: null, data_quality: 'historical', vas_7d: 3 })
})

t.test('audience items are judged alone: unknown devices, devices without sensors, implausible times', async (t) => {
  const svc = await startTestService(t)
  const p = await registerPartner(svc)
  await registerDevices(svc, p, [deviceBody('ok'), deviceBody('blind', { capabilities: { fein: false } })])
  const now = svc.clock.now()
  const result = await sendAudience(svc, p, [
    { device_id: 'ok', live_face_count: 3 },
    { device_id: 'ghost', live_face_count: 3 },
    { device_id: 'blind', live_face_count: 3 },
    { device_id: 'ok', live_face_count: 3, measured_at: new Date(now + 60_000).toISOString() },
    { device_id: 'ok', live_face_count: 3, measured_at: new Date(now - 11 * 60_000).toISOString() },
    { device_id: 'ok', attention_score: 1.5 },
    { device_id: 'ok', dominant_emotion: 'bored' },
    { device_id: 'ok', live_face_count: 4, measured_at: new Date(now - 5000).toISOString() }
  ])
  t.equal(result.accepted, 2)
  t.same(result.results.map((r: { status: string, error?: { code: string } }) => r.error?.code ?? r.status), ['accepted', 'DEVICE_NOT_FOUND', 'INVALID_PARAMETER', 'INVALID_DATE', 'INVALID_DATE', 'INVALID_PARAMETER', 'INVALID_PARAMETER', 'accepted'])
  const empty = await svc.request('POST', '/v1/partner/audience', { key: p.key, body: { updates: [] } })
  t.equal(empty.status, 400)
})
