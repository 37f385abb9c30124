import t from 'tap'
import { prebidServerRejects } from './helpers/prebid-server.js'
import { ImpIds } from '../src/inventory/adslots/imp-ids.js'
import { buyer, deviceBody, registerDevices, registerPartner, sendAudience } from './helpers/fleet.js'
import { startTestService, type TestService } from './helpers/service.js'

const PLACES = [
  { city: 'Austin', state: 'TX', country: 'US', lat: 30.2672, lng: -97.7431 },
  { city: 'Houston', state: 'TX', country: 'US', lat: 29.7604, lng: -95.3698 },
  { city: 'New York City', state: 'NY', country: 'US', lat: 40.7128, lng: -74.006 },
  { city: 'Toronto', state: 'ON', country: 'CA', lat: 43.6532, lng: -79.3832 }
]
const VENUES = ['gym', 'bar', 'retail']
const EMOTIONS = ['happy', 'neutral']

/** 24 owned screens (4 places x 3 venues x with/without sensors) and 6 resold ones; some live, some historical. */
async function fleet (svc: TestService) {
  const owned = await registerPartner(svc)
  const reseller = await registerPartner(svc, 'reseller')
  const bodies = PLACES.flatMap((place, pi) => VENUES.flatMap((venue, vi) => [true, false].map((fein) => deviceBody(`o-${pi}-${vi}-${fein ? 's' : 'n'}`, {
    location: { ...place, venue_type: venue }, capabilities: { fein }, display: fein ? {} : { width: 1080, height: 1920 }, floor_price_cpm: 4 + pi + vi
  }))))
  const ownedIds = await registerDevices(svc, owned, bodies)
  const resoldIds = await registerDevices(svc, reseller, Array.from({ length: 6 }, (_, i) => deviceBody(`r-${i}`, { location: PLACES[i % 4], capabilities: { fein: i % 2 === 0 } })))
  const updates: Array<Record<string, unknown>> = []
  let n = 0
  for (const id of Object.keys(ownedIds).filter((d) => d.endsWith('-s'))) {
    n++
    // a third historical only (VAS, no live signal), the rest live; VAS differs per screen
    if (n % 3 === 0) updates.push({ device_id: id, vas_seconds: n, vas_plays: 1 })
    else updates.push({ device_id: id, live_face_count: n, attention_score: (n % 10) / 10, dominant_emotion: EMOTIONS[n % 2], crowd_density: n * 3, vas_seconds: n * 2, vas_plays: 2 })
  }
  await sendAudience(svc, owned, updates)
  await sendAudience(svc, reseller, [{ device_id: 'r-0', live_face_count: 9, attention_score: 0.9, vas_seconds: 50, vas_plays: 2 }])
  return { owned, reseller, ownedIds, resoldIds }
}

async function all (svc: TestService, key: string, query: string): Promise<any[]> {
  const rows: any[] = []
  let cursor: string | null = null
  do {
    const r: any = await svc.request('GET', `/openrtb/v2/adslots?${query}${cursor ? `&cursor=${cursor}` : ''}`, { key })
    if (r.status !== 200) throw new Error(r.text)
    rows.push(...(r.body.data.screens ?? r.body.data.bid_requests))
    cursor = r.body.data.cursor.next
    if (cursor !== null && r.body.data.cursor.has_more !== true) throw new Error('next without has_more')
  } while (cursor !== null)
  return rows
}

const rank = { live: 0, historical: 1, none: 2 } as const

t.test('ordering, pagination and counts', async (t) => {
  const svc = await startTestService(t)
  await fleet(svc)
  const key = await buyer(svc)
  const first = await svc.request('GET', '/openrtb/v2/adslots', { key })
  t.equal(first.status, 200)
  const d = first.body.data
  t.match(d, { total: 24, total_count: 24, sources_enabled: ['owned'], cursor: { next: null, has_more: false }, fein_coverage: { screens_with_fein: 12, screens_without_fein: 12 } })
  const keys = d.screens.map((s: any) => [rank[s.data_quality as keyof typeof rank], s.vas_7d === null ? Infinity : -s.vas_7d, s.screen_id])
  const sorted = [...keys].sort((a, b) => a[0] - b[0] || a[1] - b[1] || (a[2] < b[2] ? -1 : 1))
  t.same(keys, sorted, 'data quality, then VAS descending, then screen_id')
  t.same([...new Set(d.screens.map((s: any) => s.data_quality))], ['live', 'historical', 'none'])
  for (const s of d.screens) t.match(s, { screen_id: String, name: String, address: String, venue_type: String, slot_duration_seconds: 15, floor_price_cpm: Number, updated_at: String, source: 'owned' })
  const paged = await all(svc, key, 'limit=5')
  t.same(paged.map((s) => s.screen_id), d.screens.map((s: any) => s.screen_id), 'pages of 5 give the same 24, no gaps, no duplicates')
  const page2 = await svc.request('GET', `/openrtb/v2/adslots?limit=5&cursor=${(await svc.request('GET', '/openrtb/v2/adslots?limit=5', { key })).body.data.cursor.next}`, { key })
  t.equal(page2.body.data.total_count, null, 'later pages count only when asked')
  const counted = await svc.request('GET', `/openrtb/v2/adslots?limit=5&include_count=true&cursor=${(await svc.request('GET', '/openrtb/v2/adslots?limit=5', { key })).body.data.cursor.next}`, { key })
  t.equal(counted.body.data.total_count, 24)
  const refined = await svc.request('GET', '/openrtb/v2/adslots?orientation=portrait', { key })
  t.notOk('total_count' in refined.body.data, 'refinements omit total_count')
  t.equal(refined.body.data.total, 12)
  t.ok(refined.body.data.screens.every((s: any) => s.display.orientation === 'portrait'))
})

t.test('every filter', async (t) => {
  const svc = await startTestService(t)
  const f = await fleet(svc)
  const key = await buyer(svc)
  const q = async (query: string) => (await svc.request('GET', `/openrtb/v2/adslots?limit=200&${query}`, { key })).body.data
  t.ok((await q('venue_type=GYM')).screens.every((s: any) => s.venue_type === 'gym'), 'venue_type is case-insensitive')
  t.equal((await q('venue_type=GYM')).total, 8)
  t.equal((await q('country=ca')).total, 6)
  t.ok((await q('country=US&state=tx')).screens.every((s: any) => s.state === 'TX'))
  t.equal((await q('country=US&state=TX')).total, 12)
  t.equal((await q('city=YORK')).total, 6, 'city is a case-insensitive partial match')
  t.equal((await q('city=york&venue_type=bar')).total, 2, 'filters combine with AND')
  const minVas = await q('min_vas=10')
  t.ok(minVas.total > 0 && minVas.screens.every((s: any) => s.vas_7d >= 10 && s.data_quality !== 'none'), 'min_vas, sensors only')
  t.equal(minVas.total_count, minVas.total)
  const attentive = await q('min_attention=50')
  t.ok(attentive.total > 0)
  const audience = await svc.request('POST', '/openrtb/v2/screens/audience', { key, body: { screen_ids: attentive.screens.map((s: any) => s.screen_id) } })
  t.ok(audience.body.data.screens.every((s: any) => s.live.attention_score >= 0.5), 'min_attention is percent of the 0-1 signal')
  t.ok(attentive.screens.every((s: any) => s.data_quality === 'live' && s.live.attention_score >= 0.5 && typeof s.live.live_face_count === 'number' && typeof s.live.last_updated === 'string'), 'each row shows the live attention and faces that made it match')
  t.same(attentive.screens.map((s: any) => s.live), audience.body.data.screens.map((s: any) => ({ live_face_count: s.live.live_face_count, attention_score: s.live.attention_score, dominant_emotion: s.live.dominant_emotion, last_updated: s.live.last_updated })), 'the same signals the audience profile gives')
  const happy = await q('emotion=happy')
  t.ok(happy.screens.every((s: any) => s.live.dominant_emotion === 'happy'), 'and the emotion')
  t.ok(minVas.screens.filter((s: any) => s.data_quality === 'historical').every((s: any) => s.live === undefined), 'a historical row has no live block')
  const happyAudience = await svc.request('POST', '/openrtb/v2/screens/audience', { key, body: { screen_ids: happy.screens.map((s: any) => s.screen_id) } })
  t.ok(happy.total > 0 && happyAudience.body.data.screens.every((s: any) => s.live.dominant_emotion === 'happy'))
  t.equal((await q('emotion=happy&min_attention=0')).screens.filter((s: any) => s.data_quality === 'none').length, 0, 'screens without sensors are excluded with a FEIN filter')
  t.equal((await q('has_fein=false')).total, 12)
  const later = svc.clock.now() + 1000
  svc.clock.advance(2000)
  await svc.request('PATCH', `/v1/partner/screens/${f.ownedIds['o-0-0-s']}`, { key: f.owned.key, body: { name: 'Renamed' } })
  const since = await q(`since=${new Date(later).toISOString()}`)
  t.same(since.screens.map((s: any) => s.name), ['Renamed'], 'since returns screens changed at or after the watermark')
  t.equal((await q('max_age_rating=R')).total, 8, 'only bars accept R by default')
  await svc.request('PATCH', `/v1/partner/screens/${f.ownedIds['o-0-0-s']}`, { key: f.owned.key, body: { blocked_categories: ['IAB8-5'] } })
  t.equal((await q('allow_alcohol=true')).total, 23)
})

t.test('sources: owned, partner and all, behind the partner-display switch; cursors scoped to a source', async (t) => {
  const svc = await startTestService(t)
  await fleet(svc)
  const key = await buyer(svc)
  const q = async (query: string) => (await svc.request('GET', `/openrtb/v2/adslots?${query}`, { key }))
  const off = await q('source=partner')
  t.equal(off.status, 200, 'switch off: partner answers', { body: off.body })
  t.same(off.body.data?.screens, [], 'switch off: partner lists nothing')
  t.equal((await q('source=all')).body.data.total, 24, 'switch off: all lists owned only')
  await svc.admin('PUT', '/admin/v1/settings', { partner_display: true })
  const partner = (await q('source=partner')).body.data
  t.match(partner, { total: 6, total_count: 6, sources_enabled: ['owned', 'partner'] })
  t.ok(partner.screens.every((s: any) => s.source === 'partner'))
  const everything = await all(svc, key, 'source=all&limit=7')
  t.equal(everything.length, 30)
  t.equal(new Set(everything.map((s) => s.screen_id)).size, 30, 'no duplicates across pages and sources')
  t.same(everything.map((s) => s.source), [...Array(24).fill('owned'), ...Array(6).fill('partner')], 'owned first, then partner')
  const partnerCursor = (await q('source=partner&limit=2')).body.data.cursor.next
  const cross = await q(`source=owned&cursor=${partnerCursor}`)
  t.equal(cross.status, 400)
  t.match(cross.body, { error_code: 'invalid_parameter', param: 'cursor' })
  const ownedPage = (await q('limit=3')).body.data.screens
  const legacy = Buffer.from(`12.5:${ownedPage[2].screen_id}`).toString('base64url')
  const resumed = (await q(`limit=3&cursor=${legacy}`)).body.data.screens
  const direct = (await q('limit=6')).body.data.screens.slice(3)
  t.same(resumed.map((s: any) => s.screen_id), direct.map((s: any) => s.screen_id), 'a two-part legacy cursor decodes as owned')
  t.equal((await q('cursor=bm90LWEtY3Vyc29y')).status, 400)
})

t.test('format=openrtb: OpenRTB 2.6 bid requests as the spec lays them out', async (t) => {
  const svc = await startTestService(t)
  const f = await fleet(svc)
  const key = await buyer(svc)
  const r = await svc.request('GET', '/openrtb/v2/adslots?format=openrtb&country=US&state=TX&venue_type=gym&limit=200', { key })
  t.equal(r.status, 200)
  const d = r.body.data
  t.match(d, { available_slots: 4, cur: 'USD', tmax: 1000, sources_enabled: ['owned'], filters_applied: { venue_type: 'gym', country: 'US', state: 'TX', city: null, min_vas: null, min_attention: null, emotion: null }, signal_coverage: { total_screens: 24, fein_enriched: 12, after_filters: 4 } })
  const live = d.bid_requests.find((b: any) => b.ext.trb.fein.data_quality === 'live')
  t.ok(live, 'a live screen is among them')
  t.match(live, {
    id: /^[0-9a-f-]{36}$/,
    imp: [{ id: String, banner: { w: 1920, h: 1080 }, video: { mimes: ['video/mp4', 'video/webm'], minduration: 1, maxduration: 15, w: 1920, h: 1080, protocols: [2, 3, 5, 6, 7, 8] }, bidfloorcur: 'USD', qty: { multiplier: Number, sourcetype: 2 }, exp: 300 }],
    dooh: { id: live.ext.trb.screen_id, name: live.ext.trb.screen_name, domain: String, venuetype: ['4', '401'], venuetypetax: 5, publisher: { id: f.owned.id, name: String, domain: String } },
    device: { ua: String, geo: { lat: Number, lon: Number, country: 'USA', region: 'TX', city: String, type: 1 }, devicetype: 6, ifa: String },
    tmax: 1000,
    cur: ['USD'],
    ext: { trb: { screen_id: String, screen_name: String, venue_type: 'gym', fein: { live_face_count: Number, attention_score: Number, data_quality: 'live', last_updated: String } } }
  })
  for (const b of d.bid_requests) t.equal(prebidServerRejects(b), undefined, `${b.ext.trb.screen_id}: Prebid Server would run its auction`)
  t.notOk('site' in live || 'app' in live, 'the screen is dooh: neither site nor app (OpenRTB 2.6 allows exactly one)')
  t.notOk('bcat' in live || 'badv' in live, 'a screen without content rules sends no bcat or badv')
  t.equal(live.imp[0].qty.multiplier, live.ext.trb.fein.live_face_count || 1, 'imp.qty.multiplier from the live face count')
  const screen = (await svc.request('GET', `/openrtb/v2/screens/${live.ext.trb.screen_id}`, { key })).body.data
  t.equal(live.imp[0].bidfloor, screen.spot.floor_price_cpm, 'bidfloor is the screen floor in USD')
  const ids = new ImpIds(svc.service.store)
  const issued = ids.verify(live.imp[0].id, svc.clock.now())
  t.match(issued, { screenId: live.ext.trb.screen_id, seatId: 'buyer', floor: live.imp[0].bidfloor, multiplier: live.imp[0].qty.multiplier }, 'the imp id remembers the spot it was issued for')
  t.equal(ids.verify(live.imp[0].id, svc.clock.now() + 301_000), undefined, 'and expires with imp.exp')
  t.equal(ids.verify(live.imp[0].id.slice(0, -2) + 'xx', svc.clock.now()), undefined, 'a forged id does not verify')
  t.equal(new Set(d.bid_requests.map((b: any) => b.imp[0].id)).size, 4, 'imp ids are unique')
  const none = d.bid_requests.find((b: any) => b.ext.trb.fein.data_quality === 'none')
  t.match(none?.ext.trb.fein ?? { data_quality: 'none', live_face_count: null }, { live_face_count: null, attention_score: null, vas_7d: null })
  const paged = await all(svc, key, 'format=openrtb&limit=10')
  t.equal(paged.length, 24, 'openrtb pages too')
})

t.test('format=openrtb: the screen\'s blocked categories and advertisers travel as bcat and badv, its zip as device.geo.zip', async (t) => {
  const svc = await startTestService(t)
  const p = await registerPartner(svc)
  const ids = await registerDevices(svc, p, [deviceBody('ruled', { location: { lat: 30.2672, lng: -97.7431, venue_type: 'gym', zip: '78701' } })])
  await svc.request('PATCH', `/v1/partner/screens/${ids.ruled}`, { key: p.key, body: { blocked_categories: ['IAB8-5', 'IAB7'], blocked_advertisers: ['rival.example'] } })
  const key = await buyer(svc)
  const [req] = (await svc.request('GET', '/openrtb/v2/adslots?format=openrtb', { key })).body.data.bid_requests
  t.match(req, { bcat: ['IAB8-5', 'IAB7'], cattax: 1, badv: ['rival.example'], device: { geo: { zip: '78701', country: 'USA' } } })
  t.equal(prebidServerRejects(req), undefined, 'and Prebid Server would still run its auction')
  t.match(prebidServerRejects({ ...req, site: { id: 'x' } }), /No more than one of request.site or request.app or request.dooh/, 'the check is the real one: site beside dooh is refused')
})

t.test('bad parameters: 400 with param, nothing else happens', async (t) => {
  const svc = await startTestService(t)
  const key = await buyer(svc)
  const cases: Array<[string, string]> = [
    ['limit=0', 'limit'], ['limit=201', 'limit'], ['limit=ten', 'limit'], ['format=xml', 'format'], ['venue_type=zoo', 'venue_type'],
    ['country=USA', 'country'], ['country=ZZ', 'country'], ['state=TX', 'state'], ['min_vas=-1', 'min_vas'], ['min_attention=101', 'min_attention'],
    ['emotion=bored', 'emotion'], ['since=yesterday', 'since'], ['include_count=maybe', 'include_count'], ['source=everything', 'source'], ['colour=red', 'colour']
  ]
  for (const [query, param] of cases) {
    const r = await svc.request('GET', `/openrtb/v2/adslots?${query}`, { key })
    t.equal(r.status, 400, query)
    // The spec: a date that is not ISO 8601 is invalid_date, everywhere.
    t.match(r.body, { error_code: param === 'since' ? 'invalid_date' : 'invalid_parameter', param }, query)
  }
  t.equal((await svc.request('GET', '/openrtb/v2/adslots')).status, 401)
  t.equal((await svc.request('GET', '/openrtb/v2/adslots', { key })).status, 200, 'still serving')
})
