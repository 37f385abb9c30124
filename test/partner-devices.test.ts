import t from 'tap'
import { buyer, deviceBody, registerDevices, registerPartner } from './helpers/fleet.js'
import { startTestService } from './helpers/service.js'

t.test('a device becomes a screen: 201 with embed_url, location filled from coordinates, defaults applied', async (t) => {
  const svc = await startTestService(t)
  const p = await registerPartner(svc)
  const r = await svc.request('POST', '/v1/partner/device', { key: p.key, body: { device_id: 'lobby-1', device_type: 'android_tv', name: 'Lobby', display: { width: 1080, height: 1920, orientation: 'portrait' }, location: { lat: 41.8781, lng: -87.6298, venue_type: 'hotel_lobby', venue_name: 'The Drake' } } })
  t.equal(r.status, 201)
  const d = r.body.data
  t.match(d, { device_id: 'lobby-1', screen_id: /^scr_[0-9a-f]{20}$/, status: 'pending', last_heartbeat_at: null, embed_url: new RegExp(`^${svc.url}/embed/emb_`) })
  t.match(d.location, { city: 'Chicago', state: 'IL', country: 'US', venue_type: 'hotel_lobby', venue_name: 'The Drake', address: 'Chicago, IL, US' })
  const screen = await svc.request('GET', `/v1/partner/screens/${d.screen_id}`, { key: p.key })
  t.match(screen.body.data.settings, { slot_duration_seconds: 15, floor_price_cpm: 10, timezone: 'America/Chicago', auction_enabled: true, max_age_rating: 'PG-13' })
  svc.clock.advance(5000)
  const again = await svc.request('POST', '/v1/partner/device', { key: p.key, body: { device_id: 'lobby-1', name: 'Lobby renamed', display: { width: 1080, height: 1920 }, location: { lat: 41.8781, lng: -87.6298, venue_type: 'hotel_lobby' }, floor_price_cpm: 12 } })
  t.equal(again.status, 200, 'device_id is the upsert key')
  t.equal(again.body.data.screen_id, d.screen_id)
  t.equal(again.body.data.embed_url, d.embed_url)
  t.not(again.body.data.updated_at, d.updated_at, 'updated_at moves')
  t.equal(again.body.data.created_at, d.created_at)
  const events = svc.service.outbox.read('test', 100).filter((e) => e.type === 'screen.registered')
  t.equal(events.length, 1, 'screen.registered once')
})

t.test('registration errors: the nested envelope, the field, nothing written', async (t) => {
  const svc = await startTestService(t)
  const p = await registerPartner(svc)
  const buyerKey = await buyer(svc)
  const before = svc.snapshot()
  const cases: Array<[Record<string, unknown>, string, string]> = [
    [{ ...deviceBody('x'), device_id: undefined }, 'MISSING_REQUIRED_FIELD', 'device_id'],
    [{ ...deviceBody('x'), name: undefined }, 'MISSING_REQUIRED_FIELD', 'name'],
    [{ ...deviceBody('x'), display: undefined }, 'MISSING_REQUIRED_FIELD', 'display'],
    [deviceBody('x', { display: { width: 10 } }), 'INVALID_PARAMETER', 'display.width'],
    [deviceBody('x', { location: { venue_type: 'casino' } }), 'INVALID_PARAMETER', 'location.venue_type'],
    [deviceBody('x', { location: { lat: 95 } }), 'INVALID_PARAMETER', 'location.lat'],
    [deviceBody('x', { location: { country: 'ZZ' } }), 'INVALID_PARAMETER', 'location.country'],
    [{ ...deviceBody('x'), location: { lat: 0, lng: -140, venue_type: 'gym' } }, 'INVALID_PARAMETER', 'location.country'],
    [deviceBody('x', { timezone: 'Mars/Olympus' }), 'INVALID_PARAMETER', 'timezone'],
    [deviceBody('x', { operating_hours: { mon: [['18:00', '09:00']] } }), 'INVALID_PARAMETER', 'operating_hours'],
    [deviceBody('x', { operating_hours: { funday: [['09:00', '18:00']] } }), 'INVALID_PARAMETER', 'operating_hours'],
    [deviceBody('bad id!'), 'INVALID_PARAMETER', 'device_id']
  ]
  for (const [body, code, param] of cases) {
    const r = await svc.request('POST', '/v1/partner/device', { key: p.key, body })
    t.equal(r.status, 400, `${code} ${param}`)
    t.match(r.body.error, { code, param, request_id: /^req_/, docs_url: String })
  }
  const asBuyer = await svc.request('POST', '/v1/partner/device', { key: buyerKey, body: deviceBody('y') })
  t.equal(asBuyer.status, 403)
  t.equal(asBuyer.body.error.code, 'NOT_AUTHORIZED', 'a buyer key is not a partner key')
  t.same(svc.snapshot(), before, 'nothing written')
})

t.test('batches: each item judged alone, accepted ones committed, at most 1000', async (t) => {
  const svc = await startTestService(t)
  const p = await registerPartner(svc)
  const r = await svc.request('POST', '/v1/partner/devices/batch', { key: p.key, body: { devices: [deviceBody('a'), { device_id: 'b' }, deviceBody('c', { location: { venue_type: 'zoo' } }), deviceBody('a', { name: 'A again' })] } })
  t.equal(r.status, 200)
  t.match(r.body.data, { accepted: 2, rejected: 2 })
  t.match(r.body.data.results, [
    { index: 0, device_id: 'a', status: 'created', screen_id: /^scr_/, embed_url: String },
    { index: 1, device_id: 'b', status: 'rejected', error: { code: 'MISSING_REQUIRED_FIELD', param: 'name' } },
    { index: 2, device_id: 'c', status: 'rejected', error: { code: 'INVALID_PARAMETER', param: 'location.venue_type' } },
    { index: 3, device_id: 'a', status: 'updated' }
  ])
  const tooMany = await svc.request('POST', '/v1/partner/devices/batch', { key: p.key, body: { devices: Array.from({ length: 1001 }, (_, i) => deviceBody(`d${i}`)) } })
  t.equal(tooMany.status, 400)
  t.equal(tooMany.body.error.param, 'devices')
  const list = await svc.request('GET', '/v1/partner/devices', { key: p.key })
  t.same(list.body.data.devices.map((d: { device_id: string, name: string }) => [d.device_id, d.name]), [['a', 'A again']])
})

t.test('device list: pagination without gaps and the status filter', async (t) => {
  const svc = await startTestService(t)
  const p = await registerPartner(svc)
  const other = await registerPartner(svc)
  await registerDevices(svc, p, Array.from({ length: 7 }, (_, i) => deviceBody(`dev-${i}`)))
  await registerDevices(svc, other, [deviceBody('foreign')])
  await svc.request('POST', '/v1/partner/heartbeats', { key: p.key, body: { heartbeats: [{ device_id: 'dev-3' }] } })
  const seen: string[] = []
  let cursor: string | null = null
  do {
    const r: any = await svc.request('GET', `/v1/partner/devices?limit=3${cursor ? `&cursor=${cursor}` : ''}`, { key: p.key })
    seen.push(...r.body.data.devices.map((d: { device_id: string }) => d.device_id))
    cursor = r.body.data.cursor.next
  } while (cursor !== null)
  t.same(seen, ['dev-0', 'dev-1', 'dev-2', 'dev-3', 'dev-4', 'dev-5', 'dev-6'], 'every device once, no other partner\'s')
  const online = await svc.request('GET', '/v1/partner/devices?status=online', { key: p.key })
  t.same(online.body.data.devices.map((d: { device_id: string }) => d.device_id), ['dev-3'])
  t.equal((await svc.request('GET', '/v1/partner/devices?limit=0', { key: p.key })).status, 400)
  t.equal((await svc.request('GET', '/v1/partner/devices?status=lost', { key: p.key })).body.error.param, 'status')
})

t.test('heartbeats move screens online and offline, with events, on the injected clock', async (t) => {
  const svc = await startTestService(t, { HEARTBEAT_TIMEOUT_SECONDS: '90' })
  const p = await registerPartner(svc)
  const ids = await registerDevices(svc, p, [deviceBody('hb-1'), deviceBody('hb-2')])
  const events = () => svc.service.outbox.read('test', 1000).filter((e) => e.type.startsWith('screen.o')).map((e) => [e.type, e.data.screen_id])
  const one = await svc.request('POST', '/v1/partner/devices/hb-1/heartbeat', { key: p.key })
  t.equal(one.body.data.status, 'online')
  t.same(events(), [], 'a first heartbeat is not a return')
  const unknown = await svc.request('POST', '/v1/partner/devices/nope/heartbeat', { key: p.key })
  t.equal(unknown.status, 404)
  t.equal(unknown.body.error.code, 'DEVICE_NOT_FOUND')
  svc.clock.advance(60_000)
  await svc.service.runJobs()
  t.equal((await svc.request('GET', `/v1/partner/screens/${ids['hb-1']}`, { key: p.key })).body.data.status, 'online', 'not yet late')
  svc.clock.advance(31_000)
  await svc.service.runJobs()
  t.same(events(), [['screen.offline', ids['hb-1']]])
  t.equal((await svc.request('GET', `/v1/partner/screens/${ids['hb-1']}`, { key: p.key })).body.data.status, 'offline')
  const back = await svc.request('POST', '/v1/partner/heartbeats', { key: p.key, body: { heartbeats: [{ device_id: 'hb-1', uptime_seconds: 5 }, { device_id: 'ghost' }] } })
  t.match(back.body.data, { accepted: 1, rejected: 1, results: [{ status: 'accepted' }, { status: 'rejected', error: { code: 'DEVICE_NOT_FOUND' } }] })
  t.same(events(), [['screen.offline', ids['hb-1']], ['screen.online', ids['hb-1']]])
  svc.clock.advance(10_000)
  await svc.request('POST', '/v1/partner/devices/hb-1/heartbeat', { key: p.key })
  svc.clock.advance(85_000)
  await svc.service.runJobs()
  t.equal((await svc.request('GET', `/v1/partner/screens/${ids['hb-1']}`, { key: p.key })).body.data.status, 'online', 'a later heartbeat moved the deadline')
})

t.test('partner screens: list, detail, settings; another partner\'s screen is 404', async (t) => {
  const svc = await startTestService(t)
  const p = await registerPartner(svc)
  const other = await registerPartner(svc)
  const ids = await registerDevices(svc, p, [deviceBody('s-1')])
  const foreign = await registerDevices(svc, other, [deviceBody('s-2')])
  const key = await buyer(svc)
  t.equal((await svc.request('GET', `/v1/partner/screens/${foreign['s-2']}`, { key: p.key })).body.error.code, 'SCREEN_NOT_FOUND')
  t.equal((await svc.request('PATCH', `/v1/partner/screens/${foreign['s-2']}`, { key: p.key, body: { floor_price_cpm: 1 } })).status, 404)
  const before = (await svc.request('GET', `/v1/partner/screens/${ids['s-1']}`, { key: p.key })).body.data
  svc.clock.advance(1000)
  const patch = await svc.request('PATCH', `/v1/partner/screens/${ids['s-1']}`, { key: p.key, body: { floor_price_cpm: 11.25, slot_duration_seconds: 30, operating_hours: { mon: [['08:00', '20:00']] }, blocked_categories: ['IAB8-5', 'IAB9-7'], blocked_advertisers: ['Casino.example'], max_age_rating: 'PG' } })
  t.equal(patch.status, 200)
  t.match(patch.body.data.settings, { floor_price_cpm: 11.25, slot_duration_seconds: 30, operating_hours: { mon: [['08:00', '20:00']] }, blocked_categories: ['IAB8-5', 'IAB9-7'], blocked_advertisers: ['casino.example'], max_age_rating: 'PG' })
  t.ok(patch.body.data.updated_at > before.updated_at, 'updated_at moves')
  const listed = await svc.request('GET', `/openrtb/v2/adslots?since=${encodeURIComponent(patch.body.data.updated_at)}`, { key })
  t.same(listed.body.data.screens.map((s: { screen_id: string }) => s.screen_id), [ids['s-1']], 'the since watermark sees the change')
  t.match(listed.body.data.screens[0], { floor_price_cpm: 11.25, slot_duration_seconds: 30 })
  for (const [body, param] of [[{}, undefined], [{ floor_price_cpm: -1 }, 'floor_price_cpm'], [{ blocked_categories: ['gambling'] }, 'blocked_categories.0'], [{ timezone: 'Nowhere/Land' }, 'timezone']] as const) {
    const r = await svc.request('PATCH', `/v1/partner/screens/${ids['s-1']}`, { key: p.key, body })
    t.equal(r.status, 400, JSON.stringify(body))
    if (param !== undefined) t.equal(r.body.error.param, param)
  }
  await svc.request('PATCH', `/v1/partner/screens/${ids['s-1']}`, { key: p.key, body: { auction_enabled: false } })
  t.equal((await svc.request('GET', '/openrtb/v2/adslots', { key })).body.data.screens.length, 1, 'a disabled screen leaves adslots')
  t.equal((await svc.request('GET', `/openrtb/v2/screens/${ids['s-1']}`, { key })).status, 404, 'and buyers cannot look it up')
  const list = await svc.request('GET', '/v1/partner/screens', { key: p.key })
  t.match(list.body.data.screens, [{ screen_id: ids['s-1'], settings: { auction_enabled: false }, fein: { data_quality: 'none' } }])
})
