// Benchmark: the full POST /openrtb/v2/bid path (auth, rate limit, schema validation, imp verification, scoring,
// storage) of an approved seat, with the demo market running (DEMO_FLEET=50: its screens, players and buyer) and every
// process of the service counted, with and without pipelining, beside: a bare uWS constant reply (this machine's
// limit), the durable floor (uWS + JSON.parse + one LMDB put in one transaction), the four-write floor (the same with
// the four records a bid commits, in four tables), Fastify 5 doing parse + schema + a floor check, and uWS handing the
// work to piscina one request at a time or micro-batched (the design alternatives to scoring inline). Then the
// analytics process's CPU per funnel event over the -p 1 run, and oohbid's latency at 80% of its peak.
import { analyticsMeter, type AnalyticsCost } from './lib/analytics-meter.js'
import { cpuMeter } from './lib/cpu.js'
import { measure, type Measurement } from './lib/load.js'
import { startBare, startBaseline, startDurable, startOohbid, type ServerProcess } from './lib/processes.js'
import { printTable, save } from './lib/report.js'
import { acceptedBid } from './lib/bid-fixture.js'

const seconds = Number(process.env.BENCH_SECONDS ?? 10)
const connections = Number(process.env.BENCH_CONNECTIONS ?? 50)

const oohbid = await startOohbid({ BID_TTL_SECONDS: '86400', DEMO_FLEET: process.env.DEMO_FLEET ?? '50' })
const { key, body, sample } = await acceptedBid(oohbid)
console.log(`POST /openrtb/v2/bid, body ${body.length} bytes, ${connections} connections, ${seconds} s per run, HOT_THREADS=${process.env.HOT_THREADS ?? 'the default'}, demo fleet ${process.env.DEMO_FLEET ?? '50'}`)

const post = (url: string, extraHeaders: Record<string, string> = {}) => ({ url: `${url}/openrtb/v2/bid`, method: 'POST' as const, body, headers: { 'content-type': 'application/json', ...extraHeaders } })
const rows: Measurement[] = []
const FOUR = 'four-write floor: the same, the four records a bid commits'
const baselines: Array<[string, () => Promise<ServerProcess>]> = [
  ['durable floor: uWS + parse + one LMDB put', () => startDurable(sample, 1)],
  [FOUR, () => startDurable(sample, 4)],
  ['Fastify 5 (parse + Ajv + floor)', () => startBaseline('fastify-bid')],
  ['uWS + piscina per request', () => startBaseline('uws-piscina', { PISCINA_MODE: 'single' })],
  ['uWS + piscina micro-batched', () => startBaseline('uws-piscina', { PISCINA_MODE: 'batch' })]
]
let analytics: AnalyticsCost | undefined
/** The demo market's own processes (simulated screens and buyer, clients the service spawns), per bid: not counted above. */
const demoUs = new Map<number, number | undefined>()
for (const pipelining of [1, 10]) {
  const bare = await startBare(sample)
  rows.push(await measure('bare uWS (constant)', { ...post(bare.url), connections, pipelining, duration: seconds }, bare.child.pid))
  await bare.stop()
  const meter = pipelining === 1 ? await analyticsMeter(oohbid.url, oohbid.child.pid!) : undefined
  const demo = cpuMeter(oohbid.child.pid, 'demo')
  const m = await measure('oohbid POST /bid', { ...post(oohbid.url, { authorization: `Bearer ${key}` }), connections, pipelining, duration: seconds }, oohbid.child.pid)
  rows.push(m)
  demoUs.set(pipelining, demo(Math.round(m.rps * seconds)))
  if (meter !== undefined) analytics = await meter()
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
const row = (name: string, p: number) => rows.find((r) => r.name.startsWith(name) && r.pipelining === p)!
const ours = (p: number) => row('oohbid POST /bid', p)
const lines = [1, 10].map((p) => {
  const floor = row('durable floor', p)
  const four = row(FOUR, p)
  const cpu = (r: Measurement) => r.cpuUs ?? NaN
  return `-p ${p}: oohbid ${(cpu(ours(p)) / cpu(floor)).toFixed(2)}x the one-put floor's CPU and ${(ours(p).rps / floor.rps).toFixed(2)}x its throughput; the four-write floor is ${(cpu(four) / cpu(floor)).toFixed(2)}x the one-put floor, oohbid ${(cpu(ours(p)) / cpu(four)).toFixed(2)}x the four-write floor; vs Fastify 5 ${(ours(p).rps / row('Fastify', p).rps).toFixed(2)}x`
})
lines.push(`demo market's processes (not the service's, not counted in its rows): ${demoUs.get(1) ?? '-'} us per bid at -p 1, ${demoUs.get(10) ?? '-'} at -p 10`)
lines.push(`analytics process: ${analytics?.usPerEvent?.toFixed(1) ?? '-'} us of CPU per funnel event over the -p 1 run (${analytics?.events ?? 0} events shipped), ${analytics?.netUsPerEvent?.toFixed(1) ?? '-'} us less its idle ${((analytics?.idleUsPerSecond ?? NaN) / 1000).toFixed(1)} ms of CPU a second`)
lines.push(`p99 at 80% of peak (${Math.round(peak * 0.8)} req/s): ${paced.p99} ms`)
const note = lines.join('\n')
console.log(note)
save('bid', 'POST /openrtb/v2/bid vs bare uWS, the durable floors, Fastify and piscina offload', rows, table + '\n\n' + note)
