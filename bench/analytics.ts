// Benchmark: the analytics pipeline over 10 million and 100 million funnel events (BENCH_ANALYTICS_EVENTS), for
// embedded chDB and a ClickHouse server (BENCH_CLICKHOUSE_URL, default 127.0.0.1:8123 when one answers there).
// 1. ingest: events written to the LMDB funnel log while the service is stopped, then the service started and timed
//    until its analytics process has shipped them all into ClickHouse (raw tables and rollups, through the shipper's
//    idempotency check); beside it, the same rows inserted straight into one plain MergeTree table with no views (the
//    "bare" figure of this machine and backend).
// 2. latency: funnel, reports, market and forecast over HTTP, from the first request (202) until the answer is ready,
//    each for a seat not asked before (no cache).
import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { execFile } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { openBackend } from '../src/analytics/backends.js'
import { RowBuilder } from '../src/analytics/rows.js'
import { columnList, RAW } from '../src/analytics/schema.js'
import { FunnelLog } from '../src/events/funnel.js'
import type { FunnelEvent } from '../src/generated/types.js'
import { openStore } from '../src/store/store.js'
import { startOohbid, type ServerProcess } from './lib/processes.js'
import { analyticsCharts } from './lib/analytics-charts.js'
import { saveTable } from './lib/report.js'
import { cpuMicros } from './lib/cpu.js'

const run = promisify(execFile)
const simulator = fileURLToPath(new URL('../scripts/simulate-fleet.js', import.meta.url))
const sizes = (process.env.BENCH_ANALYTICS_EVENTS ?? '10000000,100000000').split(',').map(Number)
const SEATS = 20
const SCREENS = 2000
const DAY = 86_400_000
const serverUrl = process.env.BENCH_CLICKHOUSE_URL ?? 'http://127.0.0.1:8123'
const serverUp = await fetch(`${serverUrl}/?query=SELECT%201`).then((r) => r.ok, () => false)
const backends: Array<{ name: string, url?: string }> = [{ name: 'chDB' }, ...(serverUp ? [{ name: 'server', url: serverUrl }] : [])]
if (!serverUp) console.log(`no ClickHouse server answers at ${serverUrl}: server rows skipped`)

function progress (label: string, done: number, total: number, started: number): void {
  const pct = Math.floor((done / total) * 100)
  const rate = done / ((performance.now() - started) / 1000)
  process.stdout.write(`\r  ${label} ${'#'.repeat(Math.floor(pct / 4)).padEnd(25, '.')} ${pct}% ${Math.round(rate).toLocaleString('en-US')}/s   `)
}

/** The events of one simulated spot: a bid request, a bid response, the auction, the render and the play. */
function cycle (i: number, at: number, seats: string[], screens: string[]): FunnelEvent[] {
  const seat = seats[i % seats.length]!
  const screen = screens[(i * 7919) % screens.length]!
  const price = 2 + ((i * 37) % 1000) / 100
  const accepted = i % 5 !== 0
  const multiplier = 1 + (i % 9)
  const cat = [`IAB${1 + (i % 26)}`]
  const won = accepted && i % 2 === 0
  const events: FunnelEvent[] = [
    { stage: 'request', at, seat_id: seat, sandbox: false, screens: [screen] },
    { stage: 'bid_received', at, seat_id: seat, sandbox: false, screens: [], bids: [{ screen_id: screen, price, status: accepted ? 'accepted' : 'rejected', ...(accepted ? {} : { reason: 'below_floor' }), cat, latency_ms: 40 + (i % 200) }] }
  ]
  if (won) {
    const spot = `spt_${i}`
    const common = { screens: [screen], spot_id: spot, tier: 'open_auction', seat_id: seat, creative_id: 'cr_bench', clearing_cpm: price, multiplier }
    events.push({ stage: 'auction', at, competitors: 2, ...common }, { stage: 'render_started', at, ...common }, { stage: 'play_completed', at, duration_ms: 15000, cost_usd: Math.round(price * multiplier * 1000) / 1e6, ...common })
  }
  return events
}

/** Writes n funnel events over the last 30 days into the data directory's LMDB log (the service is stopped). */
function generate (dataDir: string, n: number, seats: string[], screens: string[]): number {
  const store = openStore(dataDir)
  const log = new FunnelLog(store)
  const now = Date.now()
  const started = performance.now()
  let written = 0
  let i = 0
  while (written < n) {
    store.write(() => {
      for (let k = 0; k < 5000 && written < n; k++, i++) {
        const at = now - 30 * DAY + Math.floor((written / n) * 30 * DAY)
        for (const e of cycle(i, at, seats, screens)) {
          if (written >= n) break
          log.append(e)
          written++
        }
      }
    })
    if (i % 200_000 < 5000) progress('writing events to LMDB', written, n, started)
  }
  progress('writing events to LMDB', written, n, started)
  process.stdout.write('\n')
  void store.close()
  return written
}

/** Rows per second of a straight insert of the same rows into one plain table (no views): the backend's bare figure. */
async function bareInsert (dataDir: string, url: string | undefined, seats: string[], screens: string[]): Promise<number> {
  const backend = await openBackend({ dataDir: `${dataDir}/bare`, ...(url !== undefined ? { url } : {}) })
  const db = `oohbid_bare_${randomBytes(4).toString('hex')}`
  await backend.exec(`CREATE DATABASE IF NOT EXISTS ${db}`)
  await backend.exec(`CREATE TABLE ${db}.bids (${columnList(RAW.bids!)}) ENGINE = MergeTree() PARTITION BY toYYYYMM(ts) ORDER BY (ts, event_id)`)
  const rows = new RowBuilder(() => undefined)
  const now = Date.now()
  for (let i = 0; i < 400_000; i++) rows.add(i + 1, cycle(i, now, seats, screens)[1]!)
  const lines = rows.take().tables.get('bids')!.text().toString().split('\n').slice(0, -1)
  const started = performance.now()
  for (let k = 0; k < lines.length; k += 20_000) await backend.insert(`${db}.bids`, RAW.bids!, Buffer.from(lines.slice(k, k + 20_000).join('\n')))
  const rate = lines.length / ((performance.now() - started) / 1000)
  await backend.exec(`DROP DATABASE ${db}`)
  await backend.close()
  return rate
}

async function pending (service: ServerProcess): Promise<number> {
  const text = await fetch(`${service.url}/metrics`).then((r) => r.text())
  return Number(/^oohbid_funnel_pending_events (\d+)/m.exec(text)?.[1] ?? NaN)
}

/** Milliseconds from the first request to a ready answer (polled every 5 ms). */
async function latency (url: string, key: string, body?: unknown): Promise<number> {
  const started = performance.now()
  for (;;) {
    const r = await fetch(url, { method: body !== undefined ? 'POST' : 'GET', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, ...(body !== undefined ? { body: JSON.stringify(body) } : {}) })
    await r.text()
    if (r.status === 200) return performance.now() - started
    if (r.status !== 202) throw new Error(`${url}: HTTP ${r.status}`)
    await new Promise((resolve) => setTimeout(resolve, 5))
  }
}

const rows: Array<Record<string, string | number>> = []
for (const backend of backends) {
  for (const size of sizes) {
    console.log(`\n${backend.name}, ${size.toLocaleString('en-US')} events`)
    const database = `oohbid_bench_${randomBytes(4).toString('hex')}`
    const env = { DEMO_FLEET: '0', TRUST_PROXY: '127.0.0.1', CLICKHOUSE_DATABASE: database, ...(backend.url !== undefined ? { CLICKHOUSE_URL: backend.url } : {}) }
    // The data directory outlives both service runs (the events are written between them).
    const dataDir = mkdtempSync(join(tmpdir(), 'oohbid-bench-analytics-'))
    let service = await startOohbid(env, dataDir)
    await run(process.execPath, [simulator, '--screens', String(SCREENS), '--base-url', service.url, '--duration', '0', '--quiet'])
    const keys: Record<string, string> = {}
    for (let s = 0; s < SEATS; s++) {
      const seatId = `bench_seat_${s}`
      const r = await fetch(`${service.url}/openrtb/v2/onboard`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-forwarded-for': `198.18.0.${s + 1}` }, body: JSON.stringify({ company_name: 'Bench', seat_id: seatId, contact_email: `b${s}@bench.example` }) }).then((x) => x.json()) as { data: { api_key: { key: string } } }
      keys[seatId] = r.data.api_key.key
      await fetch(`${service.url}/admin/v1/seats/${seatId}/rate-limits`, { method: 'PUT', headers: { authorization: `Bearer ${service.adminToken}`, 'content-type': 'application/json' }, body: JSON.stringify({ limits: { reporting: 1_000_000, inventory: 1_000_000 } }) })
    }
    await service.stop()
    const store = openStore(dataDir)
    const screens = [...store.screens.getRange()].map(({ key }) => key)
    await store.close()
    const seats = Object.keys(keys)
    if (screens.length !== SCREENS) throw new Error(`the simulator registered ${screens.length} screens, not ${SCREENS}`)
    const written = generate(dataDir, size, seats, screens)
    const bare = await bareInsert(dataDir, backend.url, seats, screens)

    service = await startOohbid(env, dataDir)
    const started = performance.now()
    // The analytics process's own CPU while it ships: the figure issue 27 bounds at 8 us an event.
    const cpuBefore = cpuMicros(service.child.pid!, 'analytics')
    for (;;) {
      const left = await pending(service)
      progress('shipping to ClickHouse', written - left, written, started)
      if (left === 0) break
      await new Promise((resolve) => setTimeout(resolve, 500))
    }
    const seconds = (performance.now() - started) / 1000
    const cpuAfter = cpuMicros(service.child.pid!, 'analytics')
    const cpuPerEvent = cpuBefore !== undefined && cpuAfter !== undefined ? (cpuAfter - cpuBefore) / written : undefined
    process.stdout.write('\n')
    // Every event of cycle() makes one row (one screen per request, one bid per response), so events/s is rows/s.
    const base = service.url
    const seat = (k: number) => keys[seats[k % seats.length]!]!
    const timings = {
      funnel: await latency(`${base}/openrtb/v2/analytics/funnel?days=30&granularity=daily`, seat(0)),
      summary: await latency(`${base}/openrtb/v2/reports/summary?days=30`, seat(1)),
      screens: await latency(`${base}/openrtb/v2/reports/screens?days=30&sort=spend`, seat(2)),
      timeseries: await latency(`${base}/openrtb/v2/reports/timeseries?days=30&granularity=hourly`, seat(3)),
      cpm: await latency(`${base}/openrtb/v2/market/cpm-benchmarks?days=30`, seat(4)),
      demand: await latency(`${base}/openrtb/v2/market/demand-analysis?days=30`, seat(5)),
      forecast: await latency(`${base}/openrtb/v2/forecast`, seat(6), { budget_usd: 1000 })
    }
    await service.stop()
    rmSync(dataDir, { recursive: true, force: true })
    if (backend.url !== undefined) await fetch(`${backend.url}/`, { method: 'POST', body: `DROP DATABASE IF EXISTS ${database}` })
    const row = {
      backend: backend.name,
      events: written,
      'ingest events/s': Math.round(written / seconds),
      'bare insert rows/s': Math.round(bare),
      'vs bare': `${(written / seconds / bare).toFixed(2)}x`,
      'analytics CPU us/event': cpuPerEvent !== undefined ? cpuPerEvent.toFixed(1) : '-',
      ...Object.fromEntries(Object.entries(timings).map(([k, v]) => [`${k} ms`, Math.round(v)]))
    }
    console.log(row)
    rows.push(row)
  }
}
saveTable('analytics', 'Analytics pipeline: ingest throughput and query latency', rows, 'Ingest: funnel events written to LMDB while the service was stopped, then shipped by its analytics process into ClickHouse (raw tables + 4 rollups through materialized views) with the idempotency check where a batch may have reached ClickHouse before; "bare insert" is the same backend taking the same kind of rows straight into one plain MergeTree table. Latency: from the first request (202 pending) to the ready answer, 30-day window, no cache.', analyticsCharts(rows))
