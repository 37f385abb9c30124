// Benchmark: hot-thread scaling. POST /openrtb/v2/bid driven by wrk (its C event loops leave more of the machine to
// the server than autocannon) against oohbid with HOT_THREADS=1 and 2, beside a bare uWS reply and the durable floor
// in the same run; each row gives requests/s, p99 and the server's CPU per request (all its threads and processes).
// Then what bounds a bigger node: LMDB takes one writer at a time, so the time a bid's transaction holds the lock
// (oohbid_lmdb_write_seconds_total in /metrics) caps the bids/s of any number of cores; bare small commits give the
// lock's own ceiling. The projection to a 16-core node is written from CPU per bid and that cap.
import { availableParallelism } from 'node:os'
import { acceptedBid } from './lib/bid-fixture.js'
import { commitCeiling } from './lib/commit-ceiling.js'
import type { Measurement } from './lib/load.js'
import { startBare, startDurable, startOohbid } from './lib/processes.js'
import { printTable, save } from './lib/report.js'
import { haveWrk, wrk } from './lib/wrk.js'

const seconds = Number(process.env.BENCH_SECONDS ?? 10)
const connections = Number(process.env.BENCH_CONNECTIONS ?? 50)
const cores = availableParallelism()
if (!await haveWrk()) throw new Error('bench/threads needs wrk (Debian: apt-get install wrk)')
const load = { connections, threads: 1, seconds }
const rows: Measurement[] = []
const post = (url: string, body: string, headers: Record<string, string> = {}) => ({ url: `${url}/openrtb/v2/bid`, method: 'POST', body, headers: { 'Content-Type': 'application/json', ...headers } })

/** The service's write transactions and the seconds they held LMDB's writer lock, all threads (/metrics). */
async function lockHeld (url: string): Promise<{ transactions: number, seconds: number }> {
  const text = await fetch(`${url}/metrics`).then((r) => r.text())
  const sum = (name: string) => [...text.matchAll(new RegExp(`^${name}\\{[^}]*\\} (\\S+)$`, 'gm'))].reduce((n, m) => n + Number(m[1]), 0)
  return { transactions: sum('oohbid_lmdb_write_transactions_total'), seconds: sum('oohbid_lmdb_write_seconds_total') }
}

let bidBody = ''
/**
 * Microseconds the writer lock was held per bid, and per write transaction, during the bid runs: since the hot-thread
 * journal a transaction applies a whole turn of bids, so only the first bounds a node's bids/s.
 */
const heldUs = new Map<number, { perBid: number, perTransaction: number }>()
const perThreads = new Map<number, Measurement>()
/** An authenticated read that writes nothing: what the threads scale to without LMDB's one writer or the analytics process. */
const reads = new Map<number, Measurement>()
for (const threads of [1, 2]) {
  const oohbid = await startOohbid({ BID_TTL_SECONDS: '86400', HOT_THREADS: String(threads) })
  const { key, body, sample } = await acceptedBid(oohbid)
  bidBody = body
  if (threads === 1) {
    console.log(`POST /openrtb/v2/bid, body ${body.length} bytes, wrk -t1 -c${connections}, ${seconds} s per run, ${cores} cores`)
    const bare = await startBare(sample)
    rows.push(await wrk('bare uWS (constant)', post(bare.url, body), load, bare.child.pid))
    await bare.stop()
    const floor = await startDurable(sample)
    rows.push(await wrk('durable floor: uWS + parse + one LMDB put', post(floor.url, body), load, floor.child.pid))
    await floor.stop()
  }
  const before = await lockHeld(oohbid.url)
  const m = await wrk(`oohbid POST /bid, HOT_THREADS=${threads}`, post(oohbid.url, body, { Authorization: `Bearer ${key}` }), load, oohbid.child.pid)
  const after = await lockHeld(oohbid.url)
  rows.push(m)
  perThreads.set(threads, m)
  const held = (after.seconds - before.seconds) * 1e6
  heldUs.set(threads, { perBid: held / (m.rps * seconds), perTransaction: held / (after.transactions - before.transactions) })
  reads.set(threads, await wrk(`oohbid GET /seat, HOT_THREADS=${threads}`, { url: `${oohbid.url}/openrtb/v2/seat`, method: 'GET', headers: { Authorization: `Bearer ${key}` } }, load, oohbid.child.pid))
  await oohbid.stop()
}
rows.push(...reads.values())
const ceiling1 = await commitCeiling(1)
const ceiling2 = await commitCeiling(2)
const table = printTable('POST /openrtb/v2/bid by hot threads, driven by wrk (same run, loopback)', rows)
const one = perThreads.get(1)!
const two = perThreads.get(2)!
const perCore = one.cpuUs !== undefined ? Math.round(1e6 / one.cpuUs) : undefined
const hold = heldUs.get(1)!
const lockCeiling = Math.round(1e6 / hold.perBid)
const byCores = perCore !== undefined ? 16 * perCore : undefined
const note = [
  `2 hot threads / 1: ${(two.rps / one.rps).toFixed(2)}x bids/s, ${(reads.get(2)!.rps / reads.get(1)!.rps).toFixed(2)}x authenticated reads/s, on ${cores} cores (wrk's own thread shares them).`,
  `LMDB commit ceiling (bid-sized synchronous transactions, the service's environment options, nothing else inside): ${ceiling1} commits/s from 1 thread, ${ceiling2} from 2 at once.`,
  `A bid held the writer lock ${hold.perBid.toFixed(1)} us with 1 hot thread (${heldUs.get(2)!.perBid.toFixed(1)} us with 2), in transactions of a turn's bids that held it ${hold.perTransaction.toFixed(0)} us each (${heldUs.get(2)!.perTransaction.toFixed(0)} with 2): one writer at a time, so at most ${lockCeiling} bids/s per node however many cores.`,
  byCores !== undefined
    ? `16-core projection: ${one.cpuUs} us of server CPU per bid is ${perCore} bids/s per core, ${byCores} bids/s on 16 cores; the writer lock allows ${lockCeiling}, so a 16-core node would serve about ${Math.min(byCores, lockCeiling)} bids/s, bound by ${byCores > lockCeiling ? 'the time each transaction holds the lock, not by cores' : 'cores, not the lock'}.`
    : ''
].join('\n')
console.log(note)
save('threads', 'POST /openrtb/v2/bid: 1 vs 2 hot threads under wrk, and the LMDB commit ceiling', rows, table + '\n\n' + note + `\n\nbid body ${bidBody.length} bytes`)
