// Benchmark: the exchange bidder endpoint (alias admission, allowlist, HMAC signature, OpenRTB 2.6 validation,
// campaign matching, budget hold, the bid response) for one exchange with a live campaign, with and without
// pipelining, beside a bare uWS constant reply and Fastify 5 doing the same parse + validation + floor check; then
// oohbid's latency at 80% of its peak (target p99 under 10 ms).
import { execFile } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { signRequest } from '../src/auth/hmac.js'
import { measure, type Measurement } from './lib/load.js'
import { startBare, startBaseline, startDurable, startOohbid } from './lib/processes.js'
import { printTable, save } from './lib/report.js'
import { benchCreative, jsonClient } from './lib/fixtures.js'
import { benchSeat } from './lib/seat.js'

const run = promisify(execFile)
const seconds = Number(process.env.BENCH_SECONDS ?? 10)
const connections = Number(process.env.BENCH_CONNECTIONS ?? 50)
const simulator = fileURLToPath(new URL('../scripts/simulate-fleet.js', import.meta.url))

const oohbid = await startOohbid()
await run(process.execPath, [simulator, '--screens', '20', '--base-url', oohbid.url, '--duration', '0', '--quiet'])
const admin = { authorization: `Bearer ${oohbid.adminToken}`, 'content-type': 'application/json' }
const key = await benchSeat(oohbid.url, oohbid.adminToken, 'bench', ['campaigns', 'creatives'])
const auth = { authorization: `Bearer ${key}`, 'content-type': 'application/json' }
await fetch(`${oohbid.url}/admin/v1/seats/bench/approve`, { method: 'POST', headers: admin, body: '{}' })
const creativeId = await benchCreative(jsonClient(oohbid.url), key, oohbid.adminToken, { fields: { advertiser_domain: 'brand.example' } })
const today = new Date().toISOString().slice(0, 10)
const campaign = await fetch(`${oohbid.url}/openrtb/v2/campaigns`, { method: 'POST', headers: auth, body: JSON.stringify({ creative_id: creativeId, name: 'Bench campaign', budget_usd: 100_000_000, bid_cpm: 5, pacing: 'asap', start_date: today, end_date: today, targeting: { countries: ['US', 'GB'] } }) })
if (campaign.status !== 201) throw new Error(`campaign: ${await campaign.text()}`)
const alias = await fetch(`${oohbid.url}/admin/v1/bidder-aliases/bench-x`, { method: 'PUT', headers: admin, body: JSON.stringify({ name: 'Bench Exchange', ip_allowlist: ['127.0.0.1', '::1'], require_signature: true, rate_limit_per_minute: 100_000_000 }) }).then((r) => r.json()) as { data: { signing_secret: string } }

const body = JSON.stringify({
  id: 'bench-request',
  at: 1,
  tmax: 120,
  cur: ['USD'],
  imp: [{ id: '1', banner: { w: 1920, h: 1080, format: [{ w: 1920, h: 1080 }] }, video: { mimes: ['video/mp4'], minduration: 5, maxduration: 15, w: 1920, h: 1080 }, bidfloor: 2.5, bidfloorcur: 'USD', qty: { multiplier: 12.5, sourcetype: 1, vendor: 'exchange-counts' }, exp: 300, ext: { exchange: { placement: 'lobby-1' } } }],
  dooh: { id: 'exchange-screen-42', name: 'Lobby screen', venuetype: ['8', '807'], venuetypetax: 5, publisher: { id: 'pub-1', name: 'Hotel Media' } },
  device: { ua: 'player/1.0', devicetype: 3, geo: { lat: 40.7128, lon: -74.006, country: 'USA', region: 'NY', city: 'New York', type: 1 } },
  source: { schain: { complete: 1, ver: '1.0', nodes: [{ asi: 'exchange.example', sid: 'pub-1', hp: 1 }] } },
  regs: { coppa: 0 },
  ext: { exchange: { region: 'us-east' } }
})
const signature = signRequest(alias.data.signing_secret, Math.floor(Date.now() / 1000), body)
const sample = await fetch(`${oohbid.url}/openrtb/bidder/bench-x/bid`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-exchange-signature': signature }, body })
const sampleText = await sample.text()
if (sample.status !== 200 || !sampleText.includes('"seatbid"')) throw new Error(`the bench request got no bid: ${sample.status} ${sampleText}`)
console.log(`POST /openrtb/bidder/{alias}/bid, request ${body.length} bytes, response ${sampleText.length} bytes, ${connections} connections, ${seconds} s per run`)

const post = (url: string, headers: Record<string, string> = {}) => ({ url: `${url}/openrtb/bidder/bench-x/bid`, method: 'POST' as const, body, headers: { 'content-type': 'application/json', ...headers } })
const rows: Measurement[] = []
for (const pipelining of [1, 10]) {
  const bare = await startBare(sampleText)
  rows.push(await measure('bare uWS (constant)', { ...post(bare.url), connections, pipelining, duration: seconds }, bare.child.pid))
  await bare.stop()
  rows.push(await measure('oohbid bidder endpoint', { ...post(oohbid.url, { 'x-exchange-signature': signature }), connections, pipelining, duration: seconds }, oohbid.child.pid))
  const floor = await startDurable(sampleText)
  rows.push(await measure('durable floor: uWS + parse + LMDB commit', { ...post(floor.url), connections, pipelining, duration: seconds }, floor.child.pid))
  await floor.stop()
  const fastify = await startBaseline('fastify-bidder')
  rows.push(await measure('Fastify 5 (parse + Ajv + floor)', { ...post(fastify.url), connections, pipelining, duration: seconds, timeout: 2 }, fastify.child.pid))
  await fastify.stop()
}
const peak = rows.find((r) => r.name === 'oohbid bidder endpoint' && r.pipelining === 1)!.rps
const paced = await measure('oohbid bidder endpoint at 80% of peak', { ...post(oohbid.url, { 'x-exchange-signature': signature }), connections, pipelining: 1, duration: seconds, overallRate: Math.round(peak * 0.8) }, oohbid.child.pid)
rows.push(paced)
await oohbid.stop()
const table = printTable('POST /openrtb/bidder/{alias}/bid vs baselines (same run, loopback)', rows)
const ours = (p: number) => rows.find((r) => r.name === 'oohbid bidder endpoint' && r.pipelining === p)!.rps
const fastify = (p: number) => rows.find((r) => r.name.startsWith('Fastify') && r.pipelining === p)!.rps
const note = `vs Fastify 5: ${(ours(1) / fastify(1)).toFixed(2)}x at -p 1, ${(ours(10) / fastify(10)).toFixed(2)}x at -p 10; p99 at 80% of peak (${Math.round(peak * 0.8)} req/s): ${paced.p99} ms (target: under 10 ms)`
console.log(note)
save('bidder', 'POST /openrtb/bidder/{alias}/bid vs bare uWS and Fastify', rows, table + '\n\n' + note)
