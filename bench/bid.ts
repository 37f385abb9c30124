// Benchmark: the full POST /openrtb/v2/bid path (auth, rate limit, schema validation, imp verification, scoring,
// storage) of an approved seat, with and without pipelining, beside: a bare uWS constant reply (this machine's limit),
// uWS doing parse + schema + floor check + one LMDB commit (the floor of any durable intake), Fastify 5 doing the same
// parse + schema + floor check, and uWS handing the work to piscina one request at a time or micro-batched (the
// design alternatives to scoring inline). Then oohbid's latency at 80% of its peak.
import { measure, type Measurement } from './lib/load.js'
import { startBare, startBaseline, startOohbid, type ServerProcess } from './lib/processes.js'
import { printTable, save } from './lib/report.js'
import { acceptedBid } from './lib/bid-fixture.js'

const seconds = Number(process.env.BENCH_SECONDS ?? 10)
const connections = Number(process.env.BENCH_CONNECTIONS ?? 50)

const oohbid = await startOohbid({ BID_TTL_SECONDS: '86400' })
const { key, body, sample } = await acceptedBid(oohbid)
console.log(`POST /openrtb/v2/bid, body ${body.length} bytes, ${connections} connections, ${seconds} s per run`)

const post = (url: string, extraHeaders: Record<string, string> = {}) => ({ url: `${url}/openrtb/v2/bid`, method: 'POST' as const, body, headers: { 'content-type': 'application/json', ...extraHeaders } })
const rows: Measurement[] = []
const baselines: Array<[string, () => Promise<ServerProcess>]> = [
  ['durable floor: uWS + parse + Ajv + LMDB commit', () => startBaseline('uws-durable-bid')],
  ['Fastify 5 (parse + Ajv + floor)', () => startBaseline('fastify-bid')],
  ['uWS + piscina per request', () => startBaseline('uws-piscina', { PISCINA_MODE: 'single' })],
  ['uWS + piscina micro-batched', () => startBaseline('uws-piscina', { PISCINA_MODE: 'batch' })]
]
for (const pipelining of [1, 10]) {
  const bare = await startBare(sample)
  rows.push(await measure('bare uWS (constant)', { ...post(bare.url), connections, pipelining, duration: seconds }, bare.child.pid))
  await bare.stop()
  rows.push(await measure('oohbid POST /bid', { ...post(oohbid.url, { authorization: `Bearer ${key}` }), connections, pipelining, duration: seconds }, oohbid.child.pid))
  for (const [name, startServer] of baselines) {
    const server = await startServer()
    rows.push(await measure(name, { ...post(server.url), connections, pipelining, duration: seconds, timeout: 2 }, server.child.pid))
    await server.stop()
  }
}
const peak = rows.find((r) => r.name === 'oohbid POST /bid' && r.pipelining === 1)!.rps
const paced = await measure('oohbid POST /bid at 80% of peak', { ...post(oohbid.url, { authorization: `Bearer ${key}` }), connections, pipelining: 1, duration: seconds, overallRate: Math.round(peak * 0.8) }, oohbid.child.pid)
rows.push(paced)
await oohbid.stop()
const table = printTable('POST /openrtb/v2/bid vs baselines (same run, loopback)', rows)
const ours = (p: number) => rows.find((r) => r.name === 'oohbid POST /bid' && r.pipelining === p)!.rps
const fastify = (p: number) => rows.find((r) => r.name.startsWith('Fastify') && r.pipelining === p)!.rps
const note = `vs Fastify 5: ${(ours(1) / fastify(1)).toFixed(2)}x at -p 1, ${(ours(10) / fastify(10)).toFixed(2)}x at -p 10; p99 at 80% of peak (${Math.round(peak * 0.8)} req/s): ${paced.p99} ms`
console.log(note)
save('bid', 'POST /openrtb/v2/bid vs bare uWS, Fastify and piscina offload', rows, table + '\n\n' + note)
