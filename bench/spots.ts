// Benchmark: the waterfall, POST {embed_url}/spots as screen players call it, over fleets of 10k and 1M screens
// (BENCH_SCREENS). 20 approved seats each bid on the same BENCH_BID_SCREENS screens (one BidResponse per page of
// GET /adslots?format=openrtb), so each of those screens holds 20 stored bids. Measured: the first decision on each
// of them (the auction among 20 bids, every bid settled: one winner, 19 losses, the spot recorded), then decisions on
// the same screens with nothing left to settle (the house creative), beside a bare uWS reply of the same bytes, the
// durable floor (uWS + parse + one LMDB put) and the four-write floor (a bid's four records in one commit) in the
// same run, with every process of the service counted, the demo market running (DEMO_FLEET, default 50, as
// bench/bid; the screens its players hold are left out of the measured ones). The bids carry no nurl or lurl, so the
// numbers are the decision's own, not the notice sender's. Each measured run starts once the analytics process
// has shipped the funnel events that waited before it (the fleet's, the stored bids', the run before's), which it
// would otherwise count as its own. The service's heartbeat timeout is a day, as the bids' TTL is: the measured players
// heartbeat once, before their first spot, and a fleet of them going offline in the middle of a run (a status write,
// an index move and a screen.offline event each) is not a decision's cost.
import type autocannon from 'autocannon'
import { execFile } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { openStore } from '../src/store/store.js'
import { analyticsDrained } from './lib/analytics-meter.js'
import { benchCreative, jsonClient } from './lib/fixtures.js'
import { measure, type Measurement } from './lib/load.js'
import { startBare, startDurable, startOohbid } from './lib/processes.js'
import { printTable, save } from './lib/report.js'
import { benchSeat } from './lib/seat.js'

const run = promisify(execFile)
const seconds = Number(process.env.BENCH_SECONDS ?? 10)
const connections = Number(process.env.BENCH_CONNECTIONS ?? 50)
const sizes = (process.env.BENCH_SCREENS ?? '10000,1000000').split(',').map(Number)
const bidScreens = Number(process.env.BENCH_BID_SCREENS ?? 4000)
/**
 * Screens whose auctions run before the measured ones, uncounted, after two dry runs of every measured decision: the
 * settling path's functions are compiled by V8's optimizing compiler on background threads, and compiled again after
 * a deoptimization, during their first thousands of calls, which a run of 4,000 decisions would otherwise count
 * (85-90% of the V8 threads' CPU, 150 us a decision, in a profile of that run after 800 uncounted auctions alone).
 */
const WARM_SCREENS = 1000
const SEATS = 20
const PAGE = 200
const simulator = fileURLToPath(new URL('../scripts/simulate-fleet.js', import.meta.url))

type BidRequest = { imp: Array<{ id: string, bidfloor: number }>, dooh: { id: string } }

/** A player's request headers: each screen is a player of its own at its own address (the player group is limited per address). */
function player (i: number): Record<string, string> {
  return { 'content-type': 'application/json', 'x-forwarded-for': `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}` }
}

/** fn for each path (and its index), 50 requests in flight at a time. */
async function inBatches<T> (paths: string[], fn: (path: string, i: number) => Promise<T>): Promise<T[]> {
  const out: T[] = []
  for (let i = 0; i < paths.length; i += 50) out.push(...await Promise.all(paths.slice(i, i + 50).map((p, j) => fn(p, i + j))))
  return out
}

/** Whether each screen is open now (a dry run settles nothing); outside its hours a screen answers tier closed. */
let probed = 0
function auctionsNow (url: string, paths: string[]): Promise<boolean[]> {
  return inBatches(paths, (p) => fetch(`${url}${p}?dry_run=true`, { method: 'POST', headers: player(probed++), body: '{"fp":"bench-player"}' }).then((r) => r.json()).then((j: any) => j.data?.tier !== undefined && j.data.tier !== 'closed'))
}

/**
 * 20 approved seats with a creative each, every one bidding on the first `screens` screens of GET /adslots that are
 * open now (the fleet's venues keep hours in their own time zones, so which ones depends on the hour the bench runs).
 * Answers those screens' spot paths.
 */
async function storeBids (oohbid: { url: string, adminToken: string, dataDir: string }, screens: number): Promise<string[]> {
  const call = jsonClient(oohbid.url)
  const store = openStore(oohbid.dataDir)
  const pathOf = new Map<string, string | undefined>()
  for (let s = 0; s < SEATS; s++) {
    const seat = `spots${s}`
    const key = await benchSeat(oohbid.url, oohbid.adminToken, seat, ['bidding', 'inventory', 'creatives'])
    await call(`/admin/v1/seats/${seat}/approve`, { method: 'POST', key: oohbid.adminToken, body: {} })
    const creative = await benchCreative(call, key, oohbid.adminToken)
    let cursor: string | null = null
    let taken = 0
    do {
      const page = await call(`/openrtb/v2/adslots?format=openrtb&limit=${PAGE}${cursor !== null ? `&cursor=${encodeURIComponent(cursor)}` : ''}`, { key }) as { bid_requests: BidRequest[], cursor: { next: string | null } }
      if (page.cursor === undefined) throw new Error(`adslots page failed: ${JSON.stringify(page).slice(0, 400)}`)
      cursor = page.cursor.next
      const unknown = page.bid_requests.map((br) => br.dooh.id).filter((id) => !pathOf.has(id))
      if (unknown.length > 0) {
        store.refresh()
        const paths = unknown.map((id) => `/embed/${store.screens.get(id)!.embed_token}/spots`)
        const open = await auctionsNow(oohbid.url, paths)
        unknown.forEach((id, i) => pathOf.set(id, open[i] === true ? paths[i] : undefined))
      }
      const bid = page.bid_requests.filter((br) => pathOf.get(br.dooh.id) !== undefined).slice(0, screens - taken).map((br, i) => ({
        id: `${seat}-${taken + i}`, impid: br.imp[0]!.id, price: br.imp[0]!.bidfloor + 1 + s * 0.25, crid: creative, adomain: [`brand${s}.example`], adm: `<img src="https://cdn.example/${seat}.png">`
      }))
      if (bid.length === 0) continue
      const answer = await call('/openrtb/v2/bid', { method: 'POST', key, body: { id: `spots-${seat}-${taken}`, cur: 'USD', seatbid: [{ seat: 'dsp', bid }] } }) as { accepted: number }
      if (answer.accepted !== bid.length) throw new Error(`${seat}: ${answer.accepted} of ${bid.length} bids accepted: ${JSON.stringify(answer).slice(0, 300)}`)
      taken += bid.length
    } while (cursor !== null && taken < screens)
  }
  void store.close()
  return [...pathOf.values()].filter((p): p is string => p !== undefined).slice(0, screens)
}

/** autocannon options that ask each path once per round, in order, across all connections. */
function rotating (url: string, paths: string[], amount?: number, query = ''): autocannon.Options & { pipelining: number, connections: number } {
  let next = 0
  return {
    url,
    connections,
    pipelining: 1,
    ...(amount !== undefined ? { amount } : { duration: seconds }),
    requests: [{ method: 'POST' as const, body: '{"fp":"bench-player"}', setupRequest: (req: autocannon.Request) => {
      const i = next++ % paths.length
      return { ...req, path: paths[i]! + query, headers: player(i) }
    } }]
  }
}

const rows: Measurement[] = []
const notes: string[] = []
for (const screens of sizes) {
  console.log(`\n-- ${screens.toLocaleString('en-US')} screens, ${SEATS} seats bidding on ${bidScreens.toLocaleString('en-US')} of them`)
  const oohbid = await startOohbid({ BID_TTL_SECONDS: '86400', HEARTBEAT_TIMEOUT_SECONDS: '86400', TRUST_PROXY: '127.0.0.1', DEMO_FLEET: process.env.DEMO_FLEET ?? '50' })
  const t0 = Date.now()
  // From an address of its own and under names of its own: a fleet of 1M registers 10 partners, the limit an address
  // has an hour; the demo market's registrations from this host would count against it, and so would each of its
  // partner names the demo market had taken first (the simulator tries the next slug).
  await run(process.execPath, [simulator, '--screens', String(screens), '--base-url', oohbid.url, '--duration', '0', '--quiet', '--forwarded-for', '198.51.100.250', '--names', 'bench'], { maxBuffer: 64 * 1024 * 1024 })
  const t1 = Date.now()
  const stored = await storeBids(oohbid, Math.min(bidScreens + WARM_SCREENS, screens))
  // Each player heartbeats before its first spot, as the page does at load: the heartbeat binds the screen to it, so
  // the decisions measured below are decisions, not first binds. A screen the demo market's players hold (409) is left
  // out.
  const bound = await inBatches(stored, (p, i) => fetch(`${oohbid.url}${p.replace(/spots$/, 'heartbeat')}`, { method: 'POST', headers: player(i), body: '{"fp":"bench-player"}' }).then((r) => r.status === 200))
  const all = stored.filter((_, i) => bound[i])
  const warm = all.slice(0, Math.min(WARM_SCREENS, Math.floor(all.length / 5)))
  const paths = all.slice(warm.length)
  if (paths.length === 0) throw new Error('no screen of the fleet is open at this hour')
  console.log(`  seeded in ${((t1 - t0) / 1000).toFixed(0)} s; ${all.length * SEATS} bids on ${all.length} screens open now stored in ${((Date.now() - t1) / 1000).toFixed(0)} s`)
  const sample = await fetch(`${oohbid.url}${paths[0]}?dry_run=true`, { method: 'POST', headers: player(0), body: '{"fp":"bench-player"}' }).then((r) => r.text())
  if (!sample.includes('"tier":"open_auction"')) throw new Error(`the first decision is not an auction: ${sample.slice(0, 300)}`)
  const bare = await startBare(sample)
  rows.push(await measure(`bare uWS (spot bytes) @${screens / 1000}k`, rotating(bare.url, paths), bare.child.pid))
  await bare.stop()
  const floor = await startDurable(sample, 1)
  rows.push(await measure(`durable floor: uWS + parse + one LMDB put @${screens / 1000}k`, rotating(floor.url, paths), floor.child.pid))
  await floor.stop()
  const four = await startDurable(sample, 4)
  rows.push(await measure(`four-write floor: a bid's four records @${screens / 1000}k`, rotating(four.url, paths), four.child.pid))
  await four.stop()
  await measure(`warm-up: ${paths.length * 2} dry runs, not counted`, rotating(oohbid.url, paths, paths.length * 2, '?dry_run=true'))
  await measure(`warm-up: ${warm.length} auctions, not counted`, rotating(oohbid.url, warm, warm.length))
  await analyticsDrained(oohbid.url)
  rows.push(await measure(`waterfall, ${SEATS} stored bids settled @${screens / 1000}k`, rotating(oohbid.url, paths, paths.length), oohbid.child.pid))
  await analyticsDrained(oohbid.url)
  rows.push(await measure(`waterfall, nothing to settle @${screens / 1000}k`, rotating(oohbid.url, paths), oohbid.child.pid))
  await oohbid.stop()
  notes.push(`${screens.toLocaleString('en-US')} screens: ${all.length} screens open at the hour of the run, with ${SEATS} stored bids each (${warm.length} of them decided first, uncounted); fleet seeded in ${((t1 - t0) / 1000).toFixed(0)} s`)
}
const table = printTable('POST {embed_url}/spots: the waterfall (same run, loopback)', rows)
console.log(notes.join('\n'))
save('spots', 'POST {embed_url}/spots: the waterfall at 10k and 1M screens, 20 seats bidding', rows, table + '\n\n' + notes.join('\n'))
