// Benchmark: an authenticated GET (GET /openrtb/v2/seat: key digest lookup, seat load, rate limit, JSON reply)
// against a bare uWS endpoint in the same run, with and without pipelining. The seat gets a custom limit through the
// operator API so that the route, not the limiter, is measured.
import { measure, type Measurement } from './lib/load.js'
import { startBare, startOohbid } from './lib/processes.js'
import { printTable, save } from './lib/report.js'
import { benchSeat } from './lib/seat.js'

const seconds = Number(process.env.BENCH_SECONDS ?? 10)
const connections = Number(process.env.BENCH_CONNECTIONS ?? 50)

const oohbid = await startOohbid()
const key = await benchSeat(oohbid.url, oohbid.adminToken, 'bench', ['account'])
const sample = await fetch(`${oohbid.url}/openrtb/v2/seat`, { headers: { authorization: `Bearer ${key}` } }).then((r) => r.text())
const bare = await startBare(sample)

console.log(`authenticated GET /openrtb/v2/seat, ${connections} connections, ${seconds} s per run (response ${sample.length} bytes)`)
const rows: Measurement[] = []
for (const pipelining of [1, 10]) {
  rows.push(await measure('bare uWS (constant)', { url: `${bare.url}/openrtb/v2/seat`, connections, pipelining, duration: seconds }, bare.child.pid))
  rows.push(await measure('oohbid GET /seat', { url: `${oohbid.url}/openrtb/v2/seat`, headers: { authorization: `Bearer ${key}` }, connections, pipelining, duration: seconds }, oohbid.child.pid))
}
await Promise.all([bare.stop(), oohbid.stop()])
const table = printTable('Authenticated GET vs bare uWS (same run, loopback)', rows)
save('authenticated-get', 'Authenticated GET /openrtb/v2/seat vs bare uWS', rows, table)
