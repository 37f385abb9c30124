import { createHash } from 'node:crypto'
import t from 'tap'
import { deviceBody, registerDevices, registerPartner } from './helpers/fleet.js'
import { adoptLegacyBindings } from '../src/inventory/inventory.js'
import { startTestService } from './helpers/service.js'

// The player page's routes as a device and its partner call them (the page itself runs in test/player.test.ts).

t.test('the page, its heartbeat, the device binding and leaving', async (t) => {
  const svc = await startTestService(t, { HEARTBEAT_TIMEOUT_SECONDS: '90' })
  const partner = await registerPartner(svc)
  const [screenId] = Object.values(await registerDevices(svc, partner, [deviceBody('page-1')]))
  const device = async () => (await svc.request('GET', '/v1/partner/devices', { key: partner.key })).body.data.devices[0]
  const embed = new URL((await device()).embed_url).pathname

  const page = await svc.request('GET', `${embed}?fp=abc`)
  t.equal(page.status, 200)
  t.match(page.headers.get('content-type'), /^text\/html; charset=utf-8/)
  t.equal(page.headers.get('cache-control'), 'public, max-age=300')
  const csp = page.headers.get('content-security-policy')!
  const script = /<script>([\s\S]*)<\/script>/.exec(page.text)![1]!
  t.ok(csp.includes(`script-src 'sha256-${createHash('sha256').update(script).digest('base64')}'`), 'the inline script is allowed by its hash, nothing else')
  t.match(csp, /default-src 'none'/)
  t.match(page.text, /window, 'oohbid'/)
  t.match(await svc.request('GET', '/embed/emb_nope'), { status: 404, body: { error_code: 'screen_not_found' } })

  const hb = await svc.request('POST', `${embed}/heartbeat`, { body: { fp: 'device-a' } })
  t.match(hb, { status: 200, body: { data: { screen_id: screenId, status: 'online', heartbeat_seconds: 30, bound: true } } })
  t.match(await device(), { status: 'online', player_bound: true })
  const before = svc.snapshot()
  const bad: Array<[string, unknown, number, string]> = [
    [`${embed}/heartbeat`, { fp: 'device-b' }, 409, 'device_mismatch'],
    [`${embed}/heartbeat`, {}, 409, 'device_mismatch'],
    [`${embed}/spots`, { fp: 'device-b' }, 409, 'device_mismatch'],
    [`${embed}/leave`, { fp: 'device-b' }, 409, 'device_mismatch'],
    [`${embed}/heartbeat`, { fp: 7 }, 400, 'invalid_parameter'],
    [`${embed}/heartbeat`, { fp: 'x'.repeat(300) }, 400, 'invalid_parameter'],
    [`${embed}/heartbeat`, { colour: 'red' }, 400, 'invalid_parameter'],
    ['/embed/emb_nope/heartbeat', {}, 404, 'screen_not_found'],
    ['/embed/emb_nope/leave', {}, 404, 'screen_not_found']
  ]
  for (const [path, body, status, code] of bad) t.match(await svc.request('POST', path, { body }), { status, body: { error_code: code } }, `${path} ${JSON.stringify(body).slice(0, 40)}`)
  t.same(svc.snapshot(), before, 'nothing written')
  t.match(await svc.request('POST', `${embed}/spots`, { body: { fp: 'device-a' } }), { status: 200, body: { data: { tier: 'house', spot_id: null, creative: null } } }, 'the bound device still asks (nothing to play: no spot recorded)')

  t.equal((await svc.request('DELETE', '/v1/partner/devices/page-1/player', { key: partner.key })).body.data.player_bound, false, 'the partner releases the binding')
  t.match(await svc.request('POST', `${embed}/heartbeat`, { body: { fp: 'device-b' } }), { status: 200, body: { data: { bound: true } } }, 'and the replacement device binds')
  t.match(await svc.request('DELETE', '/v1/partner/devices/nope/player', { key: partner.key }), { status: 404, body: { error: { code: 'DEVICE_NOT_FOUND' } } })

  const left = await svc.request('POST', `${embed}/leave`, { body: { fp: 'device-b' } })
  t.match(left.body.data, { status: 'offline' })
  t.equal((await device()).status, 'offline', 'offline at once')
  const events = svc.service.outbox.read('test', 100).filter((e) => e.data.screen_id === screenId && e.type.startsWith('screen.o'))
  t.match(events.map((e) => e.type), ['screen.offline'])
  t.match(events[0]!.data, { status: 'offline', offline_since: new Date(svc.clock.now()).toISOString() })
  svc.clock.advance(5_000)
  await svc.request('POST', `${embed}/heartbeat`, { body: { fp: 'device-b' } })
  const back = svc.service.outbox.read('test', 100).filter((e) => e.data.screen_id === screenId && e.type === 'screen.online')
  t.match(back[0]?.data, { offline_since: events[0]!.data.offline_since }, 'screen.online says when it left')
  svc.clock.advance(100_000)
  await svc.service.runJobs()
  t.equal((await device()).status, 'offline', 'a page that stops heartbeating goes offline after the timeout')
})

t.test('a page\'s first heartbeat and first spot request, sent together, leave the screen online and bound', async (t) => {
  const svc = await startTestService(t)
  const partner = await registerPartner(svc)
  const ids = Array.from({ length: 300 }, (_, i) => `together-${i}`)
  await registerDevices(svc, partner, ids.map((id) => deviceBody(id)))
  const devices = (await svc.request('GET', '/v1/partner/devices?limit=500', { key: partner.key })).body.data.devices as Array<{ device_id: string, embed_url: string }>
  // As the page does at load: both at once, which two hot threads may serve side by side. The spot binds the player
  // outside a transaction; a bind written from its request's snapshot undid the heartbeat committed meanwhile (with
  // 300 screens, 3 were left pending in 2 runs of 3). Twenty screens at a time: the pairs race each other all the
  // same, and a loaded machine does not queue 600 requests on new connections at once.
  for (let from = 0; from < devices.length; from += 20) {
    await Promise.all(devices.slice(from, from + 20).map(async (d) => {
      const embed = new URL(d.embed_url).pathname
      const [hb, spot] = await Promise.all([
        svc.request('POST', `${embed}/heartbeat`, { body: { fp: `fp-${d.device_id}` } }),
        svc.request('POST', `${embed}/spots`, { body: { fp: `fp-${d.device_id}` } })
      ])
      t.equal(hb.status, 200)
      t.equal(spot.status, 200)
    }))
  }
  const after = (await svc.request('GET', '/v1/partner/devices?limit=500', { key: partner.key })).body.data.devices as Array<{ device_id: string, status: string, player_bound: boolean }>
  t.same(after.filter((d) => d.status !== 'online' || !d.player_bound).map((d) => d.device_id), [], 'every screen online and bound')
})

t.test('bindings an earlier version kept in the screen status hold after an upgrade', async (t) => {
  const svc = await startTestService(t)
  const partner = await registerPartner(svc)
  const [screenId] = Object.values(await registerDevices(svc, partner, [deviceBody('upgraded')]))
  const device = async () => (await svc.request('GET', '/v1/partner/devices', { key: partner.key })).body.data.devices[0]
  const embed = new URL((await device()).embed_url).pathname
  t.equal((await svc.request('POST', `${embed}/heartbeat`, { body: { fp: 'device-a' } })).status, 200)
  // The data as the version before kept it: the fp inside the status record, no players table entry.
  const store = svc.service.store
  store.write(() => {
    store.players.removeSync(screenId!)
    store.status.putSync(screenId!, { ...store.status.get(screenId!)!, player: 'device-a' } as never)
    store.meta.removeSync('migrated:players')
  })
  adoptLegacyBindings(store)
  t.notOk('player' in store.status.get(screenId!)!, 'the status no longer carries it')
  t.match(await device(), { player_bound: true, status: 'online' })
  t.match(await svc.request('POST', `${embed}/spots`, { body: { fp: 'device-b' } }), { status: 409, body: { error_code: 'device_mismatch' } }, 'another device is still refused')
  t.equal((await svc.request('POST', `${embed}/spots`, { body: { fp: 'device-a' } })).status, 200, 'the bound one still plays')
  const before = svc.snapshot()
  adoptLegacyBindings(store)
  t.same(svc.snapshot(), before, 'a second start moves nothing')
})
