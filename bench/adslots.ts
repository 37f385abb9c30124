// Benchmark: GET /openrtb/v2/adslots in both formats at limit 50 and 200, over fleets of 10k and 1M screens
// (BENCH_SCREENS), each beside a bare uWS server answering the same bytes. Also times the page assembly that the
// LMDB layout makes cheap, against decoding each screen record, on the same data.
import { execFile } from 'node:child_process'
import { readFileSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { performance } from 'node:perf_hooks'
import { summaryOf } from '../src/inventory/rows.js'
import { openStore } from '../src/store/store.js'
import { measure, type Measurement } from './lib/load.js'
import { startBare, startDurable, startOohbid } from './lib/processes.js'
import { printTable, save } from './lib/report.js'
import { benchSeat } from './lib/seat.js'

const run = promisify(execFile)
const seconds = Number(process.env.BENCH_SECONDS ?? 10)
const connections = Number(process.env.BENCH_CONNECTIONS ?? 50)
const sizes = (process.env.BENCH_SCREENS ?? '10000,1000000').split(',').map(Number)
const simulator = fileURLToPath(new URL('../scripts/simulate-fleet.js', import.meta.url))

/** Page assembly in-process over the service's own LMDB files: pre-encoded rows against decode-and-stringify. */
function layoutComparison (dataDir: string, limit: number): { preEncodedUs: number, decodedUs: number } {
  const store = openStore(dataDir)
  const keys = [...store.adslotIndex.getKeys({ start: [0], end: [1], limit } as never)] as unknown as Array<[number, number, number, string]>
  const rounds = 200
  let t0 = performance.now()
  let bytes = 0
  for (let r = 0; r < rounds; r++) {
    const parts: string[] = []
    for (const k of keys) parts.push(store.rows.get(k[3])![0] + '}')
    bytes += parts.join(',').length
  }
  const preEncodedUs = ((performance.now() - t0) * 1000) / rounds
  t0 = performance.now()
  for (let r = 0; r < rounds; r++) {
    const rows = keys.map((k) => summaryOf(store.screens.get(k[3])!))
    bytes -= JSON.stringify(rows).length
  }
  const decodedUs = ((performance.now() - t0) * 1000) / rounds
  void store.close()
  return { preEncodedUs: Math.round(preEncodedUs), decodedUs: Math.round(decodedUs) }
}

const rows: Measurement[] = []
const notes: string[] = []
for (const screens of sizes) {
  console.log(`\n-- ${screens.toLocaleString('en-US')} screens`)
  const oohbid = await startOohbid()
  const t0 = Date.now()
  // Register the fleet, then one 10-second cycle of audience data for 20k screens so that VAS history orders them.
  const sim = run(process.execPath, [simulator, '--screens', String(screens), '--base-url', oohbid.url, '--duration', '10', '--live', String(Math.min(screens, 20_000))], { maxBuffer: 64 * 1024 * 1024 })
  const { stdout } = await sim
  console.log(stdout.trim().split('\n').filter((l) => l.startsWith('registered')).join('\n'))
  console.log(`  seeded in ${((Date.now() - t0) / 1000).toFixed(0)} s`)
  const key = await benchSeat(oohbid.url, oohbid.adminToken, 'bench', ['inventory'])
  const auth = { authorization: `Bearer ${key}` }
  for (const [format, limit] of [['screens', 50], ['screens', 200], ['openrtb', 50], ['openrtb', 200]] as const) {
    const path = `/openrtb/v2/adslots?format=${format}&limit=${limit}`
    const sample = await fetch(oohbid.url + path, { headers: auth }).then((r) => r.text())
    const bare = await startBare(sample)
    const label = `${format} limit=${limit} @${screens >= 1e6 ? `${screens / 1e6}M` : `${screens / 1e3}k`}`
    rows.push(await measure(`bare uWS (same ${Math.round(sample.length / 1024)} KB)`, { url: bare.url + path, connections, pipelining: 1, duration: seconds }, bare.child.pid))
    await bare.stop()
    rows.push(await measure(`oohbid ${label}`, { url: oohbid.url + path, headers: auth, connections, pipelining: 1, duration: seconds }, oohbid.child.pid))
    // format=openrtb records each page (the request funnel event): the floor commits once and sends the same bytes.
    if (format === 'openrtb') {
      const floor = await startDurable(sample)
      rows.push(await measure(`durable floor (same ${Math.round(sample.length / 1024)} KB)`, { url: floor.url + path, connections, pipelining: 1, duration: seconds }, floor.child.pid))
      await floor.stop()
    }
  }
  const metrics = await fetch(`${oohbid.url}/metrics`).then((r) => r.text())
  const heap = Number(/nodejs_heap_used_bytes (\d+)/.exec(metrics)?.[1] ?? 0)
  const status = readFileSync(`/proc/${oohbid.child.pid}/status`, 'utf8')
  const kb = (field: string) => Number(new RegExp(`${field}:\\s+(\\d+)`).exec(status)?.[1] ?? 0) / 1024
  const file = statSync(join(oohbid.dataDir, 'oohbid.lmdb')).size
  // RSS counts the LMDB pages the process touched through its memory map (RssFile): page cache the kernel reclaims at
  // will. RssAnon is the process's own memory.
  notes.push(`${screens.toLocaleString('en-US')} screens: RSS ${kb('VmRSS').toFixed(0)} MiB = ${kb('RssAnon').toFixed(0)} MiB own memory (JS heap ${(heap / 1048576).toFixed(0)} MiB) + ${kb('RssFile').toFixed(0)} MiB of mapped files; LMDB file ${(file / 1048576).toFixed(0)} MiB`)
  for (const limit of [50, 200]) {
    const { preEncodedUs, decodedUs } = layoutComparison(oohbid.dataDir, limit)
    notes.push(`${screens.toLocaleString('en-US')} screens, page of ${limit}: pre-encoded rows ${preEncodedUs} us, decoding each record + JSON.stringify ${decodedUs} us (${(decodedUs / Math.max(1, preEncodedUs)).toFixed(1)}x)`)
  }
  await oohbid.stop()
}

const table = printTable('GET /openrtb/v2/adslots vs bare uWS answering the same bytes (c=50, -p 1, loopback)', rows)
console.log('\n' + notes.join('\n'))
save('adslots', 'GET /openrtb/v2/adslots vs bare uWS (same bytes)', rows, table + '\n\n' + notes.join('\n'))
