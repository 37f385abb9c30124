// Benchmark: what one shipped batch costs the analytics process per funnel event, in-process (the shipper and embedded
// chDB, as the analytics process runs them, without the service around them). The batches are the ones a POST /bid
// run makes: bid_received events of one seat on one screen, alone or with the few events of the other four kinds that
// the demo market adds meanwhile (a bid request, an auction, a render and a play per 1,000 bids), at 10k, 45k (a
// 10-second bench/bid run) and 100k events (a full batch). Each batch is logged to LMDB and drained three times in one
// process; the table gives the median, the main thread's share (reading the log and building the rows) and the rest
// (chDB's threads: parsing, the raw table, its views' parts, merges). BENCH_DIR puts the data on another filesystem:
// ClickHouse writes a directory of about ten files for every part of every insert, and what creating a file costs
// differs by filesystem more than anything the shipper does.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { openBackend } from '../src/analytics/backends.js'
import { ClickHouseSink } from '../src/analytics/load.js'
import { ddl } from '../src/analytics/schema.js'
import { Shipper } from '../src/analytics/shipper.js'
import { dropAllShipped, FunnelLog } from '../src/events/funnel.js'
import { createLogger } from '../src/log.js'
import { openStore } from '../src/store/store.js'
import { statMicros } from './lib/cpu.js'
import { saveTable } from './lib/report.js'

const ROUNDS = 3
const sizes = (process.env.BENCH_BATCHES ?? '10000,45000,100000').split(',').map(Number)
const base = process.env.BENCH_DIR ?? tmpdir()

/** CPU of this process and of its main thread alone, microseconds (the thread's from /proc, in clock ticks). */
function cpu (): { all: number, main: number } {
  const u = process.cpuUsage()
  return { all: u.user + u.system, main: statMicros(`/proc/self/task/${process.pid}/stat`) }
}

/** Logs n bids in transactions of 50 (a hot thread's turn), with the demo market's other events when trickle is set. */
function fill (store: ReturnType<typeof openStore>, log: FunnelLog, n: number, trickle: boolean): number {
  const at0 = Date.now()
  let events = 0
  for (let i = 0; i < n;) {
    store.write(() => {
      for (let k = 0; k < 50 && i < n; k++, i++) {
        const at = at0 + Math.floor(i / 5)
        log.append({ stage: 'bid_received', at, seat_id: 'seat_bench', sandbox: false, screens: [], bids: [{ screen_id: 'scr_bench', price: 5.5, status: 'accepted', cat: ['IAB1'], latency_ms: 3, adomain: ['brand.example'] }] })
        events++
        if (trickle && i % 1000 === 0) {
          const spot = { screens: ['scr_demo'], spot_id: `spt_${i}`, tier: 'open_auction' as const, seat_id: 'seat_demo', creative_id: 'cr_demo', clearing_cpm: 4, multiplier: 2 }
          log.append({ stage: 'request', at, seat_id: 'seat_demo', sandbox: false, screens: ['scr_demo'] })
          log.append({ stage: 'auction', at, competitors: 1, ...spot })
          log.append({ stage: 'render_started', at, ...spot })
          log.append({ stage: 'play_completed', at, duration_ms: 15000, cost_usd: 0.008, ...spot })
          events += 4
        }
      }
    })
  }
  return events
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!
const rows: Array<Record<string, string | number>> = []
for (const trickle of [false, true]) {
  for (const size of sizes) {
    const dir = mkdtempSync(join(base, 'oohbid-analytics-batch-'))
    const store = openStore(dir)
    const log = new FunnelLog(store)
    const target = { database: 'oohbid' }
    const backend = await openBackend({ dataDir: dir })
    for (const statement of ddl(target)) await backend.exec(statement)
    const shipper = new Shipper(store, new ClickHouseSink(backend, target, (id) => store.screens.fresh(id)), createLogger('error'), 30_000, (last) => dropAllShipped(store, last))
    // The first batch of a process asks ClickHouse which events it already has; a steady one does not.
    await shipper.drain()
    const all: number[] = []
    const main: number[] = []
    for (let round = 0; round < ROUNDS; round++) {
      const events = fill(store, log, size, trickle)
      const before = cpu()
      await shipper.drain()
      const after = cpu()
      all.push((after.all - before.all) / events)
      main.push((after.main - before.main) / events)
      process.stdout.write(`\r  ${trickle ? 'bids + demo trickle' : 'bids only'}, ${size.toLocaleString('en-US')} events: round ${round + 1} ${((after.all - before.all) / events).toFixed(1)} us/event   `)
    }
    process.stdout.write('\n')
    const us = median(all)
    const js = median(main)
    rows.push({ batch: trickle ? 'bids + demo trickle' : 'bids only', events: size, 'CPU us/event': us.toFixed(1), 'main thread us/event': js.toFixed(1), 'chDB threads us/event': (us - js).toFixed(1), rounds: all.map((x) => x.toFixed(1)).join(' / ') })
    await backend.close()
    await store.close()
    rmSync(dir, { recursive: true, force: true })
  }
}
saveTable('analytics-batch', `Analytics process CPU per funnel event, one shipped batch (data under ${base})`, rows, 'In-process: the shipper and embedded chDB draining a batch logged to LMDB, three rounds per row (the median, and each round). "main thread": reading the log and building the rows; "chDB threads": parsing the rows, writing the raw table\'s part and each view\'s, merges. The demo trickle adds 4 events per 1,000 bids, of four other kinds: each kind\'s insert writes a part of its raw table and one of each of its three views, whatever its rows.')
