// Benchmark: hot-thread scaling. POST /openrtb/v2/bid driven by wrk (its C event loops leave more of the machine to
// the server than autocannon) against oohbid with HOT_THREADS=1 and 2, beside a bare uWS reply and the durable floor
// in the same run; each row gives requests/s, p99 and the server's CPU per request (all its threads and processes).
// Then the LMDB commit ceiling (one synchronous transaction per acknowledged bid, one writer at a time), which bounds
// what any number of cores can acknowledge, and the projection to a 16-core node written from both.
import { availableParallelism } from 'node:os'
import { acceptedBid } from './lib/bid-fixture.js'
import { commitCeiling } from './lib/commit-ceiling.js'
import type { Measurement } from './lib/load.js'
import { startBare, startBaseline, startOohbid } from './lib/processes.js'
import { printTable, save } from './lib/report.js'
import { haveWrk, wrk } from './lib/wrk.js'

const seconds = Number(process.env.BENCH_SECONDS ?? 10)
const connections = Number(process.env.BENCH_CONNECTIONS ?? 50)
const cores = availableParallelism()
if (!await haveWrk()) throw new Error('bench/threads needs wrk (Debian: apt-get install wrk)')
const load = { connections, threads: 1, seconds }
const rows: Measurement[] = []
const post = (url: string, body: string, headers: Record<string, string> = {}) => ({ url: `${url}/openrtb/v2/bid`, method: 'POST', body, headers: { 'Content-Type': 'application/json', ...headers } })

let bidBody = ''
const perThreads = new Map<number, Measurement>()
for (const threads of [1, 2]) {
  const oohbid = await startOohbid({ BID_TTL_SECONDS: '86400', HOT_THREADS: String(threads) })
  const { key, body, sample } = await acceptedBid(oohbid)
  bidBody = body
  if (threads === 1) {
    console.log(`POST /openrtb/v2/bid, body ${body.length} bytes, wrk -t1 -c${connections}, ${seconds} s per run, ${cores} cores`)
    const bare = await startBare(sample)
    rows.push(await wrk('bare uWS (constant)', post(bare.url, body), load, bare.child.pid))
    await bare.stop()
    const floor = await startBaseline('uws-durable-bid')
    rows.push(await wrk('durable floor: uWS + parse + Ajv + LMDB commit', post(floor.url, body), load, floor.child.pid))
    await floor.stop()
  }
  const m = await wrk(`oohbid POST /bid, HOT_THREADS=${threads}`, post(oohbid.url, body, { Authorization: `Bearer ${key}` }), load, oohbid.child.pid)
  rows.push(m)
  perThreads.set(threads, m)
  await oohbid.stop()
}
const ceiling1 = await commitCeiling(1)
const ceiling2 = await commitCeiling(2)
const table = printTable('POST /openrtb/v2/bid by hot threads, driven by wrk (same run, loopback)', rows)
const one = perThreads.get(1)!
const two = perThreads.get(2)!
const perCore = one.cpuUs !== undefined ? Math.round(1e6 / one.cpuUs) : undefined
const projected = perCore !== undefined ? 16 * perCore : undefined
const note = [
  `2 hot threads / 1: ${(two.rps / one.rps).toFixed(2)}x requests/s on ${cores} cores (wrk's own thread shares them).`,
  `LMDB commit ceiling (bid-sized synchronous transactions, noSync + writemap): ${ceiling1} commits/s from 1 thread, ${ceiling2} from 2 at once.`,
  perCore !== undefined && projected !== undefined
    ? `16-core projection: ${one.cpuUs} us of server CPU per bid is ${perCore} bids/s per core, so 16 cores of CPU would serve ${projected} bids/s; ` +
      `the commit ceiling (${Math.max(ceiling1, ceiling2)} commits/s, one per acknowledged bid) is ${projected > Math.max(ceiling1, ceiling2) ? 'below that: commits bound the node, not cores' : 'above that: cores bound the node, not commits'}.`
    : ''
].join('\n')
console.log(note)
save('threads', 'POST /openrtb/v2/bid: 1 vs 2 hot threads under wrk, and the LMDB commit ceiling', rows, table + '\n\n' + note + `\n\nbid body ${bidBody.length} bytes`)
