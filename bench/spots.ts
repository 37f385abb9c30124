// Benchmark: the waterfall, POST {embed_url}/spots as screen players call it, over fleets of 10k and 1M screens
// (BENCH_SCREENS). 20 approved seats each bid on the same BENCH_BID_SCREENS screens (one BidResponse per page of
// GET /adslots?format=openrtb), so each of those screens holds 20 stored bids. Measured: the first decision on each
// of them (the auction among 20 bids, every bid settled: one winner, 19 losses, the spot recorded), then decisions on
// the same screens with nothing left to settle (the house creative), beside a bare uWS reply of the same bytes and
// the durable floor (uWS + parse + one LMDB commit) in the same run. The bids carry no nurl or lurl, so the numbers
// are the decision's own, not the notice sender's.
import type autocannon from 'autocannon'
import { execFile } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { openStore } from '../src/store/store.js'
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
const SEATS = 20
const PAGE = 200
const simulator = fileURLToPath(new URL('../scripts/simulate-fleet.js', import.meta.url))

type BidRequest = { imp: Array<{ id: string, bidfloor: number }>, dooh: { id: string } }

/** 20 approved seats with a creative each, every one bidding on the first `screens` screens of GET /adslots. */
async function storeBids (oohbid: { url: string, adminToken: string }, screens: number): Promise<string[]> {
  const call = jsonClient(oohbid.url)
  const bidOn = new Set<string>()
  for (let s = 0; s < SEATS; s++) {
    const seat = `spots${s}`
    const key = await benchSeat(oohbid.url, oohbid.adminToken, seat, ['bidding', 'inventory', 'creatives'])
    await call(`/admin/v1/seats/${seat}/approve`, { method: 'POST', key: oohbid.adminToken, body: {} })
    const creative = await benchCreative(call, key, oohbid.adminToken)
    let cursor: string | null = null
    for (let taken = 0; taken < screens; taken += PAGE) {
      const page = await call(`/openrtb/v2/adslots?format=openrtb&limit=${PAGE}${cursor !== null ? `&cursor=${encodeURIComponent(cursor)}` : ''}`, { key }) as { bid_requests: BidRequest[], cursor: { next: string | null } }
      cursor = page.cursor.next
      const bid = page.bid_requests.map((br, i) => {
        bidOn.add(br.dooh.id)
        return { id: `${seat}-${taken + i}`, impid: br.imp[0]!.id, price: br.imp[0]!.bidfloor + 1 + s * 0.25, crid: creative, adomain: [`brand${s}.example`], adm: `<img src="https://cdn.example/${seat}.png">` }
      })
      const answer = await call('/openrtb/v2/bid', { method: 'POST', key, body: { id: `spots-${seat}-${taken}`, cur: 'USD', seatbid: [{ seat: 'dsp', bid }] } }) as { accepted: number }
      if (answer.accepted !== bid.length) throw new Error(`${seat}: ${answer.accepted} of ${bid.length} bids accepted: ${JSON.stringify(answer).slice(0, 300)}`)
      if (cursor === null) break
    }
  }
  return [...bidOn]
}

/** The players' spot URLs of those screens, read from the service's own LMDB (embed token -> screen). */
function spotPaths (dataDir: string, screenIds: string[]): string[] {
  const store = openStore(dataDir, undefined, true)
  const wanted = new Set(screenIds)
  const paths: string[] = []
  for (const { key, value } of store.embeds.getRange()) if (wanted.has(value)) paths.push(`/embed/${key}/spots`)
  void store.close()
  return paths
}

/**
 * The paths whose screen would hold an auction now (a dry run settles nothing): screens outside their operating hours
 * answer tier closed, which is no decision at all.
 */
async function auctionsNow (url: string, paths: string[]): Promise<string[]> {
  const open: string[] = []
  for (let i = 0; i < paths.length; i += 50) {
    const tiers = await Promise.all(paths.slice(i, i + 50).map((p) => fetch(`${url}${p}?dry_run=true`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"fp":"bench-player"}' }).then((r) => r.json()).then((j: any) => j.data?.tier as string)))
    tiers.forEach((tier, j) => { if (tier === 'auction') open.push(paths[i + j]!) })
  }
  return open
}

/** autocannon options that ask each path once per round, in order, across all connections. */
function rotating (url: string, paths: string[], amount?: number): autocannon.Options & { pipelining: number, connections: number } {
  let next = 0
  return {
    url,
    connections,
    pipelining: 1,
    ...(amount !== undefined ? { amount } : { duration: seconds }),
    requests: [{ method: 'POST' as const, headers: { 'content-type': 'application/json' }, body: '{"fp":"bench-player"}', setupRequest: (req: autocannon.Request) => ({ ...req, path: paths[next++ % paths.length]! }) }]
  }
}

const rows: Measurement[] = []
const notes: string[] = []
for (const screens of sizes) {
  console.log(`\n-- ${screens.toLocaleString('en-US')} screens, ${SEATS} seats bidding on ${bidScreens.toLocaleString('en-US')} of them`)
  const oohbid = await startOohbid({ BID_TTL_SECONDS: '86400' })
  const t0 = Date.now()
  await run(process.execPath, [simulator, '--screens', String(screens), '--base-url', oohbid.url, '--duration', '0', '--quiet'], { maxBuffer: 64 * 1024 * 1024 })
  const t1 = Date.now()
  const screenIds = await storeBids(oohbid, Math.min(bidScreens, screens))
  const paths = await auctionsNow(oohbid.url, spotPaths(oohbid.dataDir, screenIds))
  console.log(`  seeded in ${((t1 - t0) / 1000).toFixed(0)} s, ${screenIds.length * SEATS} bids stored in ${((Date.now() - t1) / 1000).toFixed(0)} s; ${paths.length} of those screens open now`)
  const sample = await fetch(`${oohbid.url}${paths[0]}?dry_run=true`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"fp":"bench-player"}' }).then((r) => r.text())
  if (!sample.includes('"tier":"auction"')) throw new Error(`the first decision is not an auction: ${sample.slice(0, 300)}`)
  const bare = await startBare(sample)
  rows.push(await measure(`bare uWS (spot bytes) @${screens / 1000}k`, rotating(bare.url, paths), bare.child.pid))
  await bare.stop()
  const floor = await startDurable(sample)
  rows.push(await measure(`durable floor: uWS + parse + LMDB commit @${screens / 1000}k`, rotating(floor.url, paths), floor.child.pid))
  await floor.stop()
  rows.push(await measure(`waterfall, ${SEATS} stored bids settled @${screens / 1000}k`, rotating(oohbid.url, paths, paths.length), oohbid.child.pid))
  rows.push(await measure(`waterfall, nothing to settle @${screens / 1000}k`, rotating(oohbid.url, paths), oohbid.child.pid))
  await oohbid.stop()
  notes.push(`${screens.toLocaleString('en-US')} screens: ${paths.length} open screens with ${SEATS} stored bids each (of ${screenIds.length} bid on; the rest were outside their operating hours); fleet seeded in ${((t1 - t0) / 1000).toFixed(0)} s`)
}
const table = printTable('POST {embed_url}/spots: the waterfall (same run, loopback)', rows)
console.log(notes.join('\n'))
save('spots', 'POST {embed_url}/spots: the waterfall at 10k and 1M screens, 20 seats bidding', rows, table + '\n\n' + notes.join('\n'))
