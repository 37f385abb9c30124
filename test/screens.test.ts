import t from 'tap'
import { buyer, deviceBody, registerDevices, registerPartner, sendAudience } from './helpers/fleet.js'
import { startTestService } from './helpers/service.js'

t.test('the screen profile has every group of the spec', async (t) => {
  const svc = await startTestService(t)
  const p = await registerPartner(svc)
  const ids = await registerDevices(svc, p, [deviceBody('prof', { device_type: 'brightsign', display: { width: 3840, height: 2160, diagonal_inches: 65 }, location: { venue_name: 'Iron Gym' }, slot_duration_seconds: 10, operating_hours: { mon: [['06:00', '22:00']], sat: [['08:00', '12:00'], ['13:00', '18:00']] } })])
  const key = await buyer(svc)
  await svc.request('POST', '/v1/partner/heartbeats', { key: p.key, body: { heartbeats: [{ device_id: 'prof' }] } })
  await sendAudience(svc, p, [{ device_id: 'prof', live_face_count: 6, attention_score: 0.5, crowd_density: 30, income_level: 'high', dwell_time_ms: 12000, vas_seconds: 12, vas_plays: 3 }])
  const r = await svc.request('GET', `/openrtb/v2/screens/${ids.prof}`, { key })
  t.equal(r.status, 200)
  t.match(r.body.data, {
    screen_id: ids.prof,
    physical: { width_px: 3840, height_px: 2160, orientation: 'landscape', aspect_ratio: '16:9', diagonal_inches: 65 },
    spot: { slot_duration_seconds: 10, spots_per_hour: 360, floor_price_cpm: 6.5, currency: 'USD', ad_formats: ['image', 'video'], open_hours_per_week: 25, timezone: 'America/Chicago' },
    venue: { venue_type: 'gym', venue_name: 'Iron Gym', openooh_venue_type: ['4', '401'], city: 'Austin', state: 'TX', country: 'US', crowd_density: 30, dwell_time_ms: 12000, income_level: 'high' },
    attention: { data_quality: 'live', vas_7d: 4, fein: { live_face_count: 6 }, vas_by_day: Array },
    performance: { audience_samples_24h: 1, avg_face_count_24h: 6, avg_attention_24h: 0.5, measured_plays_7d: 3 },
    reliability: { status: 'online', last_heartbeat_at: String, heartbeats_24h: 1 },
    device: { device_type: 'brightsign', openrtb_devicetype: 7, capabilities: { fein: true } },
    brand_safety: { blocked_categories: [], blocked_advertisers: [], max_age_rating: 'PG-13' }
  })
  t.equal(r.body.data.attention.vas_by_day.length, 7)
  const missing = await svc.request('GET', '/openrtb/v2/screens/scr_00000000000000000000', { key })
  t.equal(missing.status, 404)
  t.match(missing.body, { error_code: 'screen_not_found', param: 'id' })
})

t.test('availability: capacity from operating hours and slot duration, per day or in total', async (t) => {
  // The days it asks about are ahead of its clock, whatever day the suite runs on.
  const svc = await startTestService(t, {}, { at: Date.UTC(2026, 11, 1, 12, 0, 0) })
  const p = await registerPartner(svc)
  const ids = await registerDevices(svc, p, [
    deviceBody('always', { slot_duration_seconds: 15 }),
    deviceBody('weekdays', { slot_duration_seconds: 30, operating_hours: { mon: [['09:00', '17:00']], tue: [['09:00', '17:00']] } })
  ])
  const key = await buyer(svc)
  const r = await svc.request('POST', '/openrtb/v2/screens/availability', { key, body: { screen_ids: [ids.always, ids.weekdays], start_date: '2026-12-07', end_date: '2026-12-09', granularity: 'daily' } })
  t.equal(r.status, 200)
  const [always, weekdays] = r.body.data.screens
  t.match(always, { capacity: 3 * 5760, booked: 0, remaining: 3 * 5760 })
  t.same(weekdays.periods.map((p: any) => [p.date, p.open_hours, p.capacity]), [['2026-12-07', 8, 960], ['2026-12-08', 8, 960], ['2026-12-09', 0, 0]], 'Monday and Tuesday open 8 h, Wednesday closed')
  const total = await svc.request('POST', '/openrtb/v2/screens/availability', { key, body: { screen_ids: [ids.weekdays], start_date: '2026-12-07', end_date: '2026-12-13', granularity: 'total' } })
  t.match(total.body.data.screens[0], { capacity: 1920, periods: [{ date: '2026-12-07/2026-12-13', capacity: 1920 }] })
  const before = svc.snapshot()
  const cases: Array<[Record<string, unknown>, number, string, string]> = [
    [{ screen_ids: Array.from({ length: 51 }, (_, i) => `s${i}`), start_date: '2026-12-01', end_date: '2026-12-02' }, 400, 'invalid_parameter', 'screen_ids'],
    [{ screen_ids: [], start_date: '2026-12-01', end_date: '2026-12-02' }, 400, 'invalid_parameter', 'screen_ids'],
    [{ screen_ids: [ids.always, 'scr_nope'], start_date: '2026-12-01', end_date: '2026-12-02' }, 400, 'invalid_screen', 'screen_ids.1'],
    [{ screen_ids: [ids.always], start_date: '2026-12-05', end_date: '2026-12-01' }, 400, 'invalid_date', 'end_date'],
    [{ screen_ids: [ids.always], start_date: '12/01/2026', end_date: '2026-12-01' }, 400, 'invalid_date', 'start_date'],
    [{ screen_ids: [ids.always], start_date: '2026-01-01', end_date: '2027-06-01' }, 400, 'invalid_date', 'end_date'],
    [{ screen_ids: [ids.always], start_date: '2026-12-01' }, 400, 'missing_required_field', 'end_date'],
    [{ screen_ids: [ids.always], start_date: '2026-12-01', end_date: '2026-12-02', granularity: 'hourly' }, 400, 'invalid_parameter', 'granularity']
  ]
  for (const [body, status, code, param] of cases) {
    const bad = await svc.request('POST', '/openrtb/v2/screens/availability', { key, body })
    t.equal(bad.status, status, `${code} ${param}`)
    t.match(bad.body, { error_code: code, param })
  }
  t.same(svc.snapshot(), before, 'nothing written')
})

t.test('bulk audience: live signals and VAS history, at most 50 screens', async (t) => {
  const svc = await startTestService(t)
  const p = await registerPartner(svc)
  const ids = await registerDevices(svc, p, [deviceBody('live'), deviceBody('hist'), deviceBody('blind', { capabilities: { fein: false } })])
  const key = await buyer(svc)
  await sendAudience(svc, p, [{ device_id: 'live', live_face_count: 4, attention_score: 0.3, vas_seconds: 6, vas_plays: 2 }, { device_id: 'hist', vas_seconds: 8, vas_plays: 1 }])
  const r = await svc.request('POST', '/openrtb/v2/screens/audience', { key, body: { screen_ids: [ids.live, ids.hist, ids.blind] } })
  const [live, hist, blind] = r.body.data.screens
  t.match(live, { data_quality: 'live', live: { live_face_count: 4, attention_score: 0.3 }, historical: { vas_7d: 3 } })
  t.equal(live.historical.hourly_profile.length, 24)
  t.match(hist, { data_quality: 'historical', live: null, historical: { vas_7d: 8 } })
  t.match(blind, { data_quality: 'none', live: null, historical: null })
  const tooMany = await svc.request('POST', '/openrtb/v2/screens/audience', { key, body: { screen_ids: Array.from({ length: 51 }, (_, i) => `s${i}`) } })
  t.equal(tooMany.status, 400)
  t.equal(tooMany.body.param, 'screen_ids')
  t.equal((await svc.request('POST', '/openrtb/v2/screens/audience', { key, body: { screen_ids: ['scr_nope'] } })).body.error_code, 'invalid_screen')
})
