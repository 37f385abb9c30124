import { randomBytes } from 'node:crypto'
import { createClient } from '@clickhouse/client'
import type { Test } from 'tap'
import { approvedCreative } from './creatives.js'
import { eventually } from './eventually.js'
import { deviceBody, registerDevices, registerPartner, sendAudience } from './fleet.js'
import { startTcpProxy } from './tcp-proxy.js'
import { startTestService, type Reply, type TestService } from './service.js'

// The analytics pipeline as a buyer and an operator observe it, on one ClickHouse: events from bidding and plays
// reach ClickHouse, reports and market figures equal what the test did, answers are cached, lookback limits hold, and
// neither a killed analytics process nor a ClickHouse outage loses or doubles an event. test/analytics*.test.ts run
// it on chDB, a server and a cluster, a file each (each takes about 40 s, and the runner gives a file 120).

const DAY = 86_400_000

/** Where a suite's ClickHouse is: embedded chDB (neither set), a server, or a cluster of servers. */
export interface Variant {
  server?: string
  cluster?: string
}

/** A service on the variant's ClickHouse; on a server, in a database of its own that is dropped afterwards. */
async function start (t: { teardown (fn: () => unknown): void }, v: Variant, env: Record<string, string> = {}): Promise<TestService> {
  if (v.server === undefined) return startTestService(t, env)
  const database = `oohbid_test_${randomBytes(6).toString('hex')}`
  t.teardown(async () => {
    const client = createClient({ url: v.server! })
    await client.command({ query: `DROP DATABASE IF EXISTS ${database}` })
    await client.close()
  })
  return startTestService(t, { CLICKHOUSE_URL: v.server, CLICKHOUSE_DATABASE: database, ...(v.cluster !== undefined ? { CLICKHOUSE_CLUSTER: v.cluster } : {}), ...env })
}

/** A report, asked once: a new question waits for ClickHouse and answers 200 with the data. */
async function report (svc: TestService, path: string, opts: { key: string, body?: unknown }): Promise<Reply> {
  const r = await svc.request(opts.body !== undefined ? 'POST' : 'GET', path, opts)
  if (r.status !== 200) throw new Error(`${path} answered ${r.status}, not 200 with the data: ${r.text}`)
  return r
}

type Seat = 'alpha' | 'bravo' | 'charlie'

/** Two screens, three approved seats, and bidding and plays at a time (by default two days ago), all over HTTP. */
async function world (svc: TestService, at?: number) {
  const now = Date.now()
  const then = at ?? Math.floor(now / DAY) * DAY - 2 * DAY + 15 * 3_600_000 // 15:00 UTC two days ago: 09:00 in Austin
  svc.clock.set(then)
  const p = await registerPartner(svc)
  const ids = await registerDevices(svc, p, [
    deviceBody('gym-1', { floor_price_cpm: 2, location: { venue_type: 'gym', lat: 30.2672, lng: -97.7431 } }),
    deviceBody('bar-1', { floor_price_cpm: 3, location: { venue_type: 'bar', lat: 40.7128, lng: -74.006, city: 'New York', state: 'NY' } })
  ])
  await sendAudience(svc, p, [{ device_id: 'gym-1', live_face_count: 4, attention_score: 0.6 }])
  const devices = (await svc.request('GET', '/v1/partner/devices', { key: p.key })).body.data.devices as Array<{ device_id: string, embed_url: string }>
  const embed = (device: string) => new URL(devices.find((d) => d.device_id === device)!.embed_url).pathname
  const seats = {} as Record<Seat, { key: string, creative: string, imps: Record<string, string> }>
  for (const id of ['alpha', 'bravo', 'charlie'] as const) {
    const { key } = await svc.onboard(id)
    await svc.admin('PUT', `/admin/v1/seats/${id}/rate-limits`, { limits: { inventory: 100000, bidding: 100000, reporting: 100000 } })
    await svc.admin('POST', `/admin/v1/seats/${id}/approve`)
    const creative = await approvedCreative(svc, key, `${id} ad`)
    const requests = (await svc.request('GET', '/openrtb/v2/adslots?format=openrtb&limit=10', { key })).body.data.bid_requests as any[]
    seats[id] = { key, creative, imps: Object.fromEntries(requests.map((r) => [r.ext.trb.screen_id, r.imp[0].id])) }
  }
  const bid = async (seat: Seat, screen: string, price: number, cat: string[]) => {
    const s = seats[seat]
    const r = await svc.request('POST', '/openrtb/v2/bid', { key: s.key, body: { id: `r-${seat}`, seatbid: [{ bid: [{ id: `b-${seat}-${screen}-${price}`, impid: s.imps[ids[screen]!], price, crid: s.creative, adm: '<b>ad</b>', cat }] }] } })
    return r.body.data.results[0].status as string
  }
  const play = async (device: string) => {
    const spot = (await svc.request('POST', `${embed(device)}/spots`, { body: {} })).body.data
    await svc.request('POST', `${embed(device)}/spots/${spot.spot_id}/events`, { body: { event: 'render_started' } })
    await svc.request('POST', `${embed(device)}/spots/${spot.spot_id}/events`, { body: { event: 'play_completed', duration_ms: 15000 } })
    return spot
  }
  return { then, now, p, ids, seats, bid, play }
}

/** The whole analytics suite against one ClickHouse. */
export function analyticsSuite (t: Test, v: Variant): void {
  t.test('reports, funnel and market figures equal what was bid and played', async (t) => {
    const svc = await start(t, v)
    const w = await world(svc)
    // Bids on the gym screen from all three seats (one rejected below the floor), one on the bar screen.
    t.equal(await w.bid('alpha', 'gym-1', 5, ['IAB1']), 'accepted')
    t.equal(await w.bid('bravo', 'gym-1', 7, ['IAB1', 'IAB19']), 'accepted')
    t.equal(await w.bid('charlie', 'gym-1', 4, ['IAB1']), 'accepted')
    t.equal(await w.bid('charlie', 'gym-1', 1, ['IAB1']), 'rejected')
    t.equal(await w.bid('alpha', 'bar-1', 6, ['IAB8']), 'accepted')
    const gym = await w.play('gym-1')
    t.match(gym, { tier: 'open_auction', creative: { creative_id: w.seats.bravo.creative } })
    const bar = await w.play('bar-1')
    t.match(bar, { tier: 'open_auction', creative: { creative_id: w.seats.alpha.creative } })
    const callback = await svc.request('POST', '/v1/partner/impressions', { key: w.p.key, body: { impressions: [{ adId: w.seats.alpha.creative, impressionId: 'cb-1', deviceId: 'gym-1', duration: 15, completed: true, timestamp: w.then + 120_000 }] } })
    t.match(callback.body.data, { accepted: 1 })
    svc.clock.set(w.now)
    await svc.service.analytics.drain()
    const metrics = (await svc.request('GET', '/metrics')).text
    t.match(metrics, /^oohbid_funnel_pending_events 0$/m, 'nothing left to ship')
    t.ok(Number(/^oohbid_funnel_shipped_events_total (\d+)$/m.exec(metrics)?.[1]) >= 10, 'the shipped events counted: requests, bids, auctions, plays, the proof')

    const bravo = w.seats.bravo.key
    const summary = (await report(svc, '/openrtb/v2/reports/summary', { key: bravo })).body.data
    // bravo: 2 bid requests (one per screen), 1 bid, won the gym spot at 5.01 (alpha's 5 + 0.01), 4 faces.
    t.match(summary, { requests: 2, bids: 1, accepted: 1, wins: 1, plays: 1, impressions: 4, unique_screens: 1, spend_usd: 0.02004, cpm: 5.01, avg_win_cpm: 5.01, fill_rate: 1, win_rate: 1 })
    t.match(summary.generated_at, /^\d{4}-/)
    t.equal(summary.stale, false)

    const alpha = w.seats.alpha.key
    const funnel = (await report(svc, '/openrtb/v2/analytics/funnel?granularity=daily', { key: alpha })).body.data
    t.same(funnel.stages, { request: 2, bid_received: 2, render_started: 1, play_completed: 1 }, 'alpha: two requests, two bids, one spot won and played')
    t.same(funnel.rates, { bid_rate: 1, fill_rate: 0.5, start_to_complete_rate: 1 })
    t.equal(funnel.series.length, 8, 'every UTC day of the 7-day window, zeros included')
    const day = funnel.series.find((s: { request: number }) => s.request > 0)
    t.equal(day.period, new Date(Math.floor(w.then / DAY) * DAY).toISOString(), 'the activity lands on its UTC day')
    t.same(funnel.screens.map((s: { screen_id: string, request: number }) => [s.screen_id, s.request]).sort(), [[w.ids['bar-1'], 1], [w.ids['gym-1'], 1]].sort())
    t.match(funnel.screens.find((s: { screen_id: string }) => s.screen_id === w.ids['bar-1']), { name: 'Screen bar-1', play_completed: 1 })
    const flight = (await report(svc, '/openrtb/v2/analytics/funnel?granularity=flight', { key: alpha })).body.data
    t.equal(flight.series.length, 1)
    t.match(flight.series[0], { request: 2, bid_received: 2, play_completed: 1 })
    const oneScreen = (await report(svc, `/openrtb/v2/analytics/funnel?screen_id=${w.ids['bar-1']}`, { key: alpha })).body.data
    t.same(oneScreen.stages, { request: 1, bid_received: 1, render_started: 1, play_completed: 1 }, 'one screen\'s funnel')
    // Values travel as query parameters (or typed literals on a server without them): quotes and backslashes are data.
    for (const hostile of [`${w.ids['bar-1']}' OR screen_id != '`, `${w.ids['bar-1']}\\' OR 1 = 1 --`, "x'); DROP TABLE screen_hourly; --"]) {
      const r = await report(svc, `/openrtb/v2/analytics/funnel?screen_id=${encodeURIComponent(hostile)}`, { key: alpha })
      t.equal(r.status, 200, hostile)
      t.same(r.body.data.stages, { request: 0, bid_received: 0, render_started: 0, play_completed: 0 }, 'no screen has that id: nothing matched, nothing widened')
    }
    t.same((await report(svc, '/openrtb/v2/analytics/funnel?granularity=flight', { key: alpha })).body.data.stages, flight.stages, 'and the rollups are all still there')

    const charlie = w.seats.charlie.key
    const screens = (await report(svc, '/openrtb/v2/reports/screens?sort=bids', { key: charlie })).body.data
    t.equal(screens.screens.length, 2, 'charlie was offered both screens')
    t.match(screens.screens[0], { screen_id: w.ids['gym-1'], requests: 1, bids: 2, wins: 0, plays: 0, hours_active: 0, venue_type: 'gym', country: 'US' }, 'charlie bid twice on the gym screen and won nothing')
    t.match(screens.screens[1], { screen_id: w.ids['bar-1'], requests: 1, bids: 0 })
    const series = (await report(svc, `/openrtb/v2/reports/timeseries?granularity=hourly&start_date=${new Date(w.then).toISOString().slice(0, 10)}&end_date=${new Date(w.then).toISOString().slice(0, 10)}`, { key: alpha })).body.data
    t.equal(series.points.length, 24, 'one point per UTC hour of the day asked for')
    t.match(series.points[15], { period: new Date(w.then).toISOString(), requests: 2, bids: 2, wins: 1, plays: 1, impressions: 1, spend_usd: 0.00301 }, 'alpha won the bar spot at its floor 3 + 0.01, one face')

    const bench = (await report(svc, '/openrtb/v2/market/cpm-benchmarks', { key: alpha })).body.data
    t.match(bench.overall, { samples: 4, median: 5.5, average: 5.5 }, 'accepted bids 4, 5, 6 and 7 across three seats')
    t.same(bench.by_venue_type.map((s: { venue_type: string }) => s.venue_type), ['gym'], 'the bar segment had one seat: left out')
    t.match(bench.by_venue_type[0], { samples: 3, median: 5, p25: 4.5, p75: 6 })
    t.match(bench.by_daypart, [{ daypart: 'morning' }], 'dayparts are screen-local: 15:00 UTC is morning in Austin')
    t.match(bench.market_overview, { supply_screens: 2, avg_fill_rate: 1, avg_completion_rate: 1 })
    const demand = (await report(svc, '/openrtb/v2/market/demand-analysis', { key: alpha })).body.data
    t.same(demand.top_categories.map((c: { category: string }) => c.category), ['IAB1'], 'IAB1 had three seats; IAB19 and IAB8 one each')
    t.match(demand.top_categories[0], { name: 'Arts & Entertainment', bids: 4, share: 0.8, avg_cpm: 5.3333 }, 'four IAB1 bids (one rejected) of five; accepted ones average 16 / 3')
    t.equal(demand.baseline_cpm, 5.5)
    t.match(demand.segment_premiums.find((s: { dimension: string }) => s.dimension === 'venue_type'), { value: 'gym', avg_cpm: 5.3333, premium_pct: -3.03 })
    t.match(demand.daypart_curves, [{ daypart: 'morning', bids: 5, avg_cpm: 5.5, fill_rate: 1 }])

    const forecast = (await report(svc, '/openrtb/v2/forecast', { key: alpha, body: { targeting: { venue_type: 'gym' }, budget_usd: 100 } })).body.data
    t.match(forecast, { matching_screens: 1, screens_with_history: 0, confidence: 'medium', win_rate: 0.3333, avg_cpm: 5.01, pricing_model: 'cpm', days: 8 })
    t.equal(forecast.impressions, Math.floor((1 / 7) * 8 * 4 * (1 / 3)), 'one spot in 7 days, 4 faces a play, 1 in 3 bids wins: the supply, not the budget, bounds it')
    t.equal(forecast.budget_limited, false)
    const none = await report(svc, '/openrtb/v2/forecast', { key: alpha, body: { targeting: { venue_type: 'airport' }, budget_usd: 100 } })
    t.same(none.body.data, { message: 'No screen matches this targeting.' })
    const db = svc.service.config.clickhouseDatabase
    t.same(await svc.service.analytics.query(`SELECT tier, count() AS n, sum(givt) AS passed FROM ${db}.proofs GROUP BY tier ORDER BY tier`), [{ tier: 'impression_callback', n: 1, passed: 1 }, { tier: 'signed', n: 2, passed: 2 }], 'every proof reached ClickHouse')
    t.same(await svc.service.analytics.query(`SELECT impression_id, device_id, venue_type, duration_ms, completed FROM ${db}.impressions`), [{ impression_id: 'cb-1', device_id: 'gym-1', venue_type: 'gym', duration_ms: 15000, completed: 1 }], 'and the partner\'s impression callback')
    const partner = (await report(svc, '/v1/partner/analytics', { key: w.p.key })).body.data
    t.match(partner, { partner: { partner_id: w.p.id, screens: 2, total_plays: 2, total_impressions: 5, total_revenue_cents: 2, total_revenue_usd: 0.02305 }, stale: false }, 'the partner\'s two plays: 4 faces at 5.01 and 1 face at 3.01')
    const earnings = (await report(svc, '/v1/partner/earnings', { key: w.p.key })).body.data
    t.equal(earnings.days.length, 8, 'every UTC day of the window')
    t.match(earnings.days.find((d: { plays: number }) => d.plays > 0), { date: new Date(w.then).toISOString().slice(0, 10), plays: 2, impressions: 5, revenue_cents: 2 })
    t.same(earnings.screens.map((x: { device_id: string, revenue_cents: number }) => [x.device_id, x.revenue_cents]), [['gym-1', 2], ['bar-1', 0]])
    const stranger = await registerPartner(svc)
    t.match((await report(svc, '/v1/partner/analytics', { key: stranger.key })).body.data.partner, { screens: 0, total_plays: 0, total_revenue_cents: 0 }, 'another partner sees only its own screens')
    t.match(await svc.request('GET', '/v1/partner/analytics?start_date=2000-01-01', { key: w.p.key }), { status: 400, body: { error: { code: 'INVALID_DATE' } } })
    if (v.cluster !== undefined) {
      const client = createClient({ url: v.server! })
      const engines = await (await client.query({ query: `SELECT name, engine FROM system.tables WHERE database = '${svc.service.config.clickhouseDatabase}' AND name IN ('bids', 'bids_local', 'seat_hourly', 'seat_hourly_local')`, format: 'JSONEachRow' })).json<{ name: string, engine: string }>()
      await client.close()
      t.same(Object.fromEntries(engines.map((e) => [e.name, e.engine])), { bids: 'Distributed', bids_local: 'ReplicatedMergeTree', seat_hourly: 'Distributed', seat_hourly_local: 'ReplicatedAggregatingMergeTree' }, 'on a cluster: replicated local tables behind Distributed ones')
    }
  })

  t.test('GET /stats: real-time counters at once, and the delivery ClickHouse adds once computed', async (t) => {
    const svc = await start(t, v)
    const w = await world(svc, Date.now() - 3_600_000)
    svc.clock.advance(120)
    t.equal(await w.bid('alpha', 'gym-1', 5, ['IAB1']), 'accepted')
    t.equal(await w.bid('alpha', 'bar-1', 6, ['IAB8']), 'accepted')
    t.equal(await w.bid('alpha', 'gym-1', 1, ['IAB1']), 'rejected')
    await w.play('gym-1')
    svc.clock.set(w.now)
    await svc.service.analytics.drain()
    const first = await svc.request('GET', '/openrtb/v2/stats', { key: w.seats.alpha.key })
    t.match(first, { status: 200, body: { data: { bids: 3, accepted: 2, wins: 1, avg_latency_ms: 120, delivery: { status: 'pending' } } } }, 'the counters never wait for ClickHouse')
    await svc.service.reports.settled()
    const stats = (await svc.request('GET', '/openrtb/v2/stats', { key: w.seats.alpha.key })).body.data
    t.match(stats.delivery, { status: 'ready', stale: false, requests: 2, render_started: 1, plays: 1, impressions: 4, latency_ms: { p50: 120, p95: 120, p99: 120 } }, 'two screens offered, the gym spot played to 4 faces, every bid 120 ms after its request')
    const summary = (await report(svc, '/openrtb/v2/reports/summary?days=1', { key: w.seats.alpha.key })).body.data
    t.match(summary, { bids: stats.bids, accepted: stats.accepted, wins: stats.wins, plays: stats.delivery.plays, requests: stats.delivery.requests }, '/stats and /reports/summary agree')
    const bravo = (await svc.request('GET', '/openrtb/v2/stats', { key: w.seats.bravo.key })).body.data
    await svc.service.reports.settled()
    t.match(bravo, { bids: 0, delivery: { status: 'pending' } })
    t.match((await svc.request('GET', '/openrtb/v2/stats', { key: w.seats.bravo.key })).body.data.delivery, { status: 'ready', requests: 2, plays: 0, latency_ms: { p50: null, p95: null, p99: null } }, 'another seat sees only its own')
  })

  t.test('answers are cached for 5 minutes, then served stale while they refresh', async (t) => {
    const svc = await start(t, v)
    const w = await world(svc)
    await w.bid('alpha', 'gym-1', 5, [])
    svc.clock.set(w.now)
    await svc.service.analytics.drain()
    const first = (await report(svc, '/openrtb/v2/reports/summary', { key: w.seats.alpha.key })).body.data
    t.match(first, { bids: 1, stale: false })
    svc.clock.set(w.then + 60_000)
    await w.bid('alpha', 'bar-1', 6, [])
    svc.clock.set(w.now + 60_000)
    await svc.service.analytics.drain()
    const cached = await svc.request('GET', '/openrtb/v2/reports/summary', { key: w.seats.alpha.key })
    t.match(cached.body.data, { bids: 1, generated_at: first.generated_at }, 'within 5 minutes: the same answer')
    t.equal(cached.headers.get('x-cache'), 'fresh')
    svc.clock.advance(300_000)
    const stale = await svc.request('GET', '/openrtb/v2/reports/summary', { key: w.seats.alpha.key })
    t.match(stale.body.data, { bids: 1, stale: true }, 'expired: served stale while it is recomputed')
    await svc.service.reports.settled()
    const fresh = await svc.request('GET', '/openrtb/v2/reports/summary', { key: w.seats.alpha.key })
    t.match(fresh.body.data, { bids: 2, stale: false })
    const other = await svc.request('GET', '/openrtb/v2/reports/summary?days=30', { key: w.seats.alpha.key })
    t.match(other, { status: 200, body: { data: { bids: 2, stale: false } } }, 'another window is another query, computed for its first caller')
    t.not(other.body.data.generated_at, first.generated_at)
  })

  t.test('a question ClickHouse does not answer within REPORT_WAIT_MS is 202 pending, then 200 from the cache', async (t) => {
    const svc = await start(t, v, { REPORT_WAIT_MS: '0' })
    const { key } = await svc.onboard('impatient')
    const pending = await svc.request('GET', '/openrtb/v2/reports/summary', { key })
    t.match(pending, { status: 202, body: { success: true, data: { status: 'pending', retry_after_seconds: 1 } } })
    t.equal(pending.headers.get('retry-after'), '1')
    await svc.service.reports.settled()
    t.match(await svc.request('GET', '/openrtb/v2/reports/summary', { key }), { status: 200, body: { data: { requests: 0, stale: false } } }, 'the query went on running and its answer waits in the cache')
  })

  t.test('lookback limits and bad parameters are 400 with nothing computed', async (t) => {
    const svc = await start(t, v)
    const { key } = await svc.onboard('limits')
    const day = (offset: number) => new Date(svc.clock.now() + offset * DAY).toISOString().slice(0, 10)
    const cases: Array<[string, number, string]> = [
      ['/openrtb/v2/reports/summary?days=91', 400, 'invalid_parameter'],
      ['/openrtb/v2/reports/summary?days=0', 400, 'invalid_parameter'],
      [`/openrtb/v2/reports/summary?start_date=${day(-90)}`, 400, 'invalid_date'],
      [`/openrtb/v2/reports/timeseries?start_date=${day(-3)}&end_date=${day(-5)}`, 400, 'invalid_date'],
      [`/openrtb/v2/reports/screens?end_date=${day(-1)}`, 400, 'invalid_parameter'],
      ['/openrtb/v2/reports/timeseries?granularity=flight', 400, 'invalid_parameter'],
      ['/openrtb/v2/analytics/funnel?granularity=weekly', 400, 'invalid_parameter'],
      ['/openrtb/v2/market/cpm-benchmarks?days=366', 400, 'invalid_parameter'],
      ['/openrtb/v2/market/cpm-benchmarks?state=TX', 400, 'invalid_parameter'],
      ['/openrtb/v2/market/demand-analysis?country=USA', 400, 'invalid_parameter']
    ]
    for (const [path, status, code] of cases) {
      const r = await svc.request('GET', path, { key })
      t.match(r, { status, body: { error_code: code } }, path)
    }
    t.equal((await svc.request('GET', `/openrtb/v2/reports/summary?start_date=${day(-89)}`, { key })).status, 200, '89 days back is within the lookback')
    const forecasts: Array<[unknown, string]> = [
      [{ budget_usd: 0 }, 'invalid_budget'],
      [{}, 'missing_required_field'],
      [{ budget_usd: 10, start_date: day(-1) }, 'invalid_date'],
      [{ budget_usd: 10, start_date: day(2), end_date: day(1) }, 'invalid_date'],
      [{ budget_usd: 10, pricing_model: 'cpc' }, 'invalid_parameter']
    ]
    for (const [body, code] of forecasts) t.match(await svc.request('POST', '/openrtb/v2/forecast', { key, body }), { status: 400, body: { error_code: code } }, JSON.stringify(body))
    const noScope = await svc.request('GET', '/openrtb/v2/reports/summary', {})
    t.equal(noScope.status, 401)
  })

  t.test('killing the analytics process loses and doubles no event', async (t) => {
    const svc = await start(t, v)
    const p = await registerPartner(svc)
    await registerDevices(svc, p, Array.from({ length: 200 }, (_, i) => deviceBody(`k-${i}`)))
    const { key } = await svc.onboard('killer')
    await svc.admin('PUT', '/admin/v1/seats/killer/rate-limits', { limits: { inventory: 100000, reporting: 100000 } })
    await svc.service.analytics.ready()
    let pages = 0
    for (let round = 0; round < 3; round++) {
      for (let i = 0; i < 10; i++) {
        const r = await svc.request('GET', '/openrtb/v2/adslots?format=openrtb&limit=200', { key })
        t.equal(r.body.data.available_slots, 200)
        pages++
      }
      await svc.service.analytics.ready()
      process.kill(svc.service.analytics.pid!, 'SIGKILL')
      // The next round starts once the service has seen this exit: until then ready() still answers for the dead
      // process, and a kill sent to its pid before it is reaped would end nothing (CI once counted 2 restarts of 3).
      const restarts = `oohbid_analytics_restarts_total ${round + 1}`
      await eventually(t, `${restarts} in /metrics`, async () => (await svc.request('GET', '/metrics')).text.includes(restarts), { every: 20 })
    }
    await svc.service.analytics.drain()
    const summary = (await report(svc, '/openrtb/v2/reports/summary', { key })).body.data
    t.equal(summary.requests, pages * 200, `${pages * 200} bid requests issued, ${summary.requests} counted: none lost, none twice`)
    t.equal((await svc.service.analytics.status()).pending, 0)
    t.match((await svc.request('GET', '/metrics')).text, /^oohbid_analytics_restarts_total 3$/m, 'each kill is a restart in /metrics')
  })

  if (v.server !== undefined) {
    t.test('a ClickHouse server that goes away: events wait in LMDB and flow when it returns', async (t) => {
      const proxy = await startTcpProxy(t, new URL(v.server!))
      const svc = await start(t, { server: proxy.url, ...(v.cluster !== undefined ? { cluster: v.cluster } : {}) })
      const { key } = await svc.onboard('outage')
      await svc.admin('PUT', '/admin/v1/seats/outage/rate-limits', { limits: { inventory: 1_000_000, reporting: 100000 } })
      const p = await registerPartner(svc)
      await registerDevices(svc, p, Array.from({ length: 200 }, (_, i) => deviceBody(`o-${i}`)))
      await svc.service.analytics.ready()
      await proxy.down()
      const pages = 30
      for (let i = 0; i < pages; i++) await svc.request('GET', '/openrtb/v2/adslots?format=openrtb&limit=200', { key })
      const gauge = async () => Number(/^oohbid_funnel_pending_events (\d+)/m.exec((await svc.request('GET', '/metrics')).text)?.[1])
      t.equal(await eventually(t, `${pages} events pending in /metrics`, gauge, { until: (n) => n === pages }), pages, 'the events (one per bid request) wait in LMDB while ClickHouse is unreachable, and /metrics says how many')
      t.equal((await svc.service.analytics.status()).pending, pages)
      const failing = await svc.request('GET', '/openrtb/v2/reports/summary', { key })
      t.match(failing, { status: 503, body: { error_code: 'service_unavailable' } }, 'asked while ClickHouse is down: 503 with Retry-After')
      t.equal(failing.headers.get('retry-after'), '5')
      await svc.request('GET', '/openrtb/v2/stats', { key })
      await svc.service.reports.settled()
      t.match(await svc.request('GET', '/openrtb/v2/stats', { key }), { status: 200, body: { data: { delivery: { status: 'unavailable' } } } }, '/stats keeps answering its counters')
      await proxy.up()
      await svc.service.analytics.drain()
      svc.clock.advance(6_000)
      const summary = (await report(svc, '/openrtb/v2/reports/summary', { key })).body.data
      t.equal(summary.requests, pages * 200, 'every request counted once the server is back')
      t.equal(await gauge(), 0, 'and nothing waits')
    })
  }
}
