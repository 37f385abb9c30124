import t from 'tap'
import { interpret } from '../src/inventory/nl-query.js'
import { buyer, deviceBody, registerDevices, registerPartner, sendAudience } from './helpers/fleet.js'
import { startTestService } from './helpers/service.js'

t.test('the public catalog: filters, limit/offset, X-Cache', async (t) => {
  const svc = await startTestService(t)
  const p = await registerPartner(svc)
  const ids = await registerDevices(svc, p, [
    deviceBody('a', { floor_price_cpm: 5, location: { venue_type: 'gym' } }),
    deviceBody('b', { floor_price_cpm: 9, location: { venue_type: 'bar' } }),
    deviceBody('c', { floor_price_cpm: 12, location: { lat: 51.5074, lng: -0.1278, venue_type: 'bar', city: 'London', state: 'ENG', country: 'GB' } }),
    deviceBody('d', { floor_price_cpm: 3 })
  ])
  await svc.request('PATCH', `/v1/partner/screens/${ids.d}`, { key: p.key, body: { auction_enabled: false } })
  await svc.request('POST', '/v1/partner/heartbeats', { key: p.key, body: { heartbeats: [{ device_id: 'b' }] } })
  const first = await svc.request('GET', '/inventory/v1/screens')
  t.equal(first.status, 200)
  t.equal(first.headers.get('x-cache'), 'MISS')
  t.equal(first.body.data.total, 3, 'auction-disabled screens are not listed')
  t.match(first.body.data.screens[0], { screen_id: String, location: { lat: Number, city: String, country: String, timezone: String }, venue: { type: String, openooh: Array }, display: { width: 1920 }, device: { status: String, fein: true }, programmatic: { auction_enabled: true, floor_price_cpm: Number, currency: 'USD', formats: ['image', 'video'] }, content_rules: { blocked_categories: [] } })
  const again = await svc.request('GET', '/inventory/v1/screens')
  t.equal(again.headers.get('x-cache'), 'HIT')
  t.same(again.body.data, first.body.data)
  const q = async (query: string) => (await svc.request('GET', `/inventory/v1/screens?${query}`)).body.data
  t.equal((await q('country=GB')).total, 1)
  t.equal((await q('country=US&state=TX&venue_type=bar')).total, 1)
  t.equal((await q('min_floor_cpm=6&max_floor_cpm=10')).total, 1)
  t.same((await q('online=true')).screens.map((s: any) => s.screen_id), [ids.b!])
  const page = await q('limit=2&offset=2')
  t.match(page, { total: 3, limit: 2, offset: 2 })
  t.equal(page.screens.length, 1)
  for (const [query, param] of [['limit=0', 'limit'], ['country=XX', 'country'], ['min_floor_cpm=9&max_floor_cpm=2', 'min_floor_cpm'], ['online=sometimes', 'online'], ['x=1', 'x']] as Array<[string, string]>) {
    const r = await svc.request('GET', `/inventory/v1/screens?${query}`)
    t.equal(r.status, 400, query)
    t.match(r.body.error, { code: 'INVALID_PARAMETER', param })
  }
})

t.test('reading natural-language queries', async (t) => {
  const cases: Array<[string, Record<string, unknown>, string[]]> = [
    ['busy gyms in Austin with happy crowds under $8 CPM', { venue_types: ['gym'], city: 'Austin', state: 'TX', country: 'US', emotion: 'happy', min_crowd: 30, max_floor_cpm: 8 }, []],
    ['bars in Paris', { venue_types: ['bar'], city: 'Paris', country: 'FR' }, []],
    ['affluent airports in New York, NY', { venue_types: ['airport'], city: 'New York City', state: 'NY', income_level: 'high' }, []],
    ['attentive portrait screens in Texas', { state: 'TX', country: 'US', orientation: 'portrait', min_attention: 50 }, []],
    ['coffee shops near Springfield IL between $3 and $6 cpm', { venue_types: ['restaurant'], city: 'Springfield', state: 'IL', min_floor_cpm: 3, max_floor_cpm: 6 }, []],
    ['live hotel lobbies and airports in Germany with 70% attention', { venue_types: ['hotel_lobby', 'airport'], country: 'DE', live_only: true, min_attention: 70 }, []],
    ['salons with zebra stripes', { venue_types: ['salon'] }, ['zebra', 'stripes']]
  ]
  for (const [query, expected, unrecognized] of cases) {
    const { interpretation, unrecognized: left } = interpret(query)
    t.match(interpretation, expected, query)
    t.same(left, unrecognized, `${query}: unrecognized words`)
    t.ok(interpretation.evidence.length > 0)
  }
})

t.test('POST /discover returns the reading and ranked matches', async (t) => {
  const svc = await startTestService(t)
  const p = await registerPartner(svc)
  await registerDevices(svc, p, [
    deviceBody('busy-happy', { floor_price_cpm: 6 }),
    deviceBody('quiet-happy', { floor_price_cpm: 6 }),
    deviceBody('busy-sad', { floor_price_cpm: 6 }),
    deviceBody('busy-happy-pricey', { floor_price_cpm: 11 }),
    deviceBody('busy-happy-bar', { floor_price_cpm: 6, location: { venue_type: 'bar' } }),
    deviceBody('houston-gym', { floor_price_cpm: 6, location: { lat: 29.7604, lng: -95.3698, city: 'Houston' } })
  ])
  await sendAudience(svc, p, [
    { device_id: 'busy-happy', crowd_density: 80, live_face_count: 9, attention_score: 0.8, dominant_emotion: 'happy' },
    { device_id: 'quiet-happy', crowd_density: 5, live_face_count: 1, attention_score: 0.9, dominant_emotion: 'happy' },
    { device_id: 'busy-sad', crowd_density: 80, live_face_count: 9, attention_score: 0.8, dominant_emotion: 'sad' },
    { device_id: 'busy-happy-pricey', crowd_density: 80, live_face_count: 9, attention_score: 0.8, dominant_emotion: 'happy' },
    { device_id: 'busy-happy-bar', crowd_density: 80, live_face_count: 9, attention_score: 0.8, dominant_emotion: 'happy' },
    { device_id: 'houston-gym', crowd_density: 80, live_face_count: 9, attention_score: 0.8, dominant_emotion: 'happy' }
  ])
  const key = await buyer(svc)
  const r = await svc.request('POST', '/openrtb/v2/discover', { key, body: { query: 'busy gyms in Austin with happy crowds under $8 CPM' } })
  t.equal(r.status, 200)
  t.match(r.body.data, { query: String, interpretation: { venue_types: ['gym'], city: 'Austin', emotion: 'happy', min_crowd: 30, max_floor_cpm: 8 }, unrecognized: [], total_matches: 1 })
  t.same(r.body.data.matches.map((m: any) => m.screen.name), ['Screen busy-happy'], 'only the busy, happy, affordable Austin gym')
  t.match(r.body.data.matches[0], { score: Number, reasons: Array, screen: { data_quality: 'live', venue_type: 'gym' } })
  t.match(r.body.data.adslots_query, /venue_type=gym/)
  const bad = await svc.request('POST', '/openrtb/v2/discover', { key, body: { query: 'x' } })
  t.equal(bad.status, 400)
  t.equal(bad.body.param, 'query')
  const nothing = await svc.request('POST', '/openrtb/v2/discover', { key, body: { query: 'airports in Tokyo' } })
  t.match(nothing.body.data, { total_matches: 0, matches: [] })
})
