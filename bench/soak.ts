// Soak: the demo market plus mixed load for SOAK_SECONDS (default 600), with a hot thread ended and the analytics
// process killed with SIGKILL part-way. What a long day does to the service, measured and checked:
// - bids at full rate (autocannon, c=50), each answer counted as the DSP sees it;
// - the demo fleet's spots and plays (DEMO_FLEET screens, default 50), and the demo buyer;
// - GET /adslots walks (both formats; the bids' imps come from them), reports and market figures;
// - key creation and revocation; creatives made and moderated; webhook deliveries to a local HTTPS receiver;
// - at a third of the run the operator ends hot thread 1 (POST /admin/v1/hot-threads/1/end: a thread cannot be sent
//   SIGKILL alone), at half the analytics process gets SIGKILL.
// Then it checks: the service never died and /healthz never failed outside 10 s after each kill; no 5xx but the
// reporting routes' documented 503 with Retry-After within 10 s of the analytics kill; stderr holds only JSON lines;
// every bid acknowledged is counted in GET /stats and, once ClickHouse has caught up, in the funnel; the service's
// resident memory over the last half grew no more than 10%. It exits 1 when a check fails, so CI runs a short one
// (.ci/run: SOAK_SECONDS=90).
import { spawn } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import https from 'node:https'
import { request } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import autocannon from 'autocannon'
import { acceptedBid } from './lib/bid-fixture.js'
import { processTree } from './lib/cpu.js'
import { percentile } from './lib/percentile.js'
import { jsonClient } from './lib/fixtures.js'
import { startBaseline } from './lib/processes.js'
import { saveTable } from './lib/report.js'

const SECONDS = Number(process.env.SOAK_SECONDS ?? 600)
const FLEET = process.env.SOAK_FLEET ?? '50'
/** How long /healthz may fail after a kill, and a request may be cut, before it counts against the service. */
const KILL_WINDOW_MS = 10_000
/** autocannon's connections to POST /bid: each may have a bid in flight, stored but unanswered, when it stops. */
const CONNECTIONS = 50
const root = fileURLToPath(new URL('../..', import.meta.url))
const ca = join(root, 'test', 'fixtures', 'tls', 'ca.pem')

// The service as `npm start` runs it, with its demo market, stdout and stderr kept.
const dataDir = mkdtempSync(join(tmpdir(), 'oohbid-soak-'))
let started = Date.now()
const adminToken = 'soak-admin-token'
const child = spawn(process.execPath, [join(root, 'dist', 'src', 'main.js')], {
  env: { ...process.env, PORT: '0', HOST: '127.0.0.1', DATA_DIR: dataDir, ADMIN_TOKEN: adminToken, DEMO_FLEET: FLEET, LOG_LEVEL: 'info', REPORT_CACHE_SECONDS: '5', ALLOW_PRIVATE_CALLBACK_URLS: 'true', NODE_EXTRA_CA_CERTS: ca },
  stdio: ['ignore', 'pipe', 'pipe']
})
let died: string | undefined
child.once('exit', (code, signal) => {
  died = `exited with code ${code} signal ${signal} at ${Math.round((Date.now() - started) / 1000)} s`
  console.log(`[soak] the service ${died}`)
})
// A soak that fails to set up takes the service with it, or its open pipes would keep this process waiting.
process.on('uncaughtExceptionMonitor', () => { if (died === undefined) child.kill('SIGKILL') })
const stderr: string[] = []
let partial = ''
child.stderr!.on('data', (d: Buffer) => {
  const lines = (partial + d.toString()).split('\n')
  partial = lines.pop()!
  stderr.push(...lines)
})
const url = await new Promise<string>((resolve, reject) => {
  let out = ''
  child.stdout!.on('data', (d: Buffer) => {
    out += d.toString()
    const m = /oohbid listening on (\S+)/.exec(out)
    if (m) resolve(m[1]!)
    if (out.length > 100_000) out = out.slice(-1000)
  })
  child.once('exit', () => reject(new Error(`the service did not start: ${stderr.join('\n')}`)))
})
const call = jsonClient(url)
const elapsed = () => Math.round((Date.now() - started) / 1000)
const progress = (line: string) => console.log(`[soak ${elapsed()}s] ${line}`)

// The bench seat: approved, a creative, a bid on a screen of the fleet; every limit lifted so the routes are measured.
const fixture = await acceptedBid({ url, adminToken })
const key = fixture.key
await call('/admin/v1/seats/bench/rate-limits', { method: 'PUT', key: adminToken, body: { limits: Object.fromEntries(['bidding', 'inventory', 'creatives', 'campaigns', 'reporting', 'account', 'deals'].map((g) => [g, 100_000_000])), reason: 'soak' } })
const receiver = await startBaseline('webhook-receiver')
process.on('uncaughtExceptionMonitor', () => { receiver.child.kill('SIGKILL') })
const agent = new https.Agent({ keepAlive: true, ca: readFileSync(ca) })
const receiverCount = () => new Promise<number>((resolve, reject) => https.get(`${receiver.url}/stats`, { agent }, (res) => {
  let text = ''
  res.on('data', (d) => { text += d })
  res.on('end', () => resolve((JSON.parse(text) as { count: number }).count))
}).on('error', reject))
const hook = await call('/openrtb/v2/webhooks', { method: 'POST', key, body: { url: `${receiver.url}/hooks`, events: ['creative.moderation.completed', 'impression.verified', 'campaign.started'] } })
if (typeof hook.webhook?.webhook_id !== 'string') throw new Error(`webhook not created: ${JSON.stringify(hook)}`)
started = Date.now()
progress(`service ${url}, pid ${child.pid}, fleet ${FLEET}, seat bench set up; running ${SECONDS} s`)

// Every request the loops make: status counts, latencies (ms) per route, 5xx and errors with their time.
interface RouteLoad { requests: number, fivexx: number, errors: number, latencies: number[] }
const routes = new Map<string, RouteLoad>()
// retryable: a 503 with Retry-After, what the reporting routes answer while the analytics process restarts.
const problems: Array<{ at: number, what: string, status?: number, retryable?: boolean }> = []
const load = (name: string): RouteLoad => {
  let r = routes.get(name)
  if (r === undefined) routes.set(name, r = { requests: 0, fivexx: 0, errors: 0, latencies: [] })
  return r
}
async function timed (name: string, path: string, init: { method?: string, body?: unknown, key?: string } = {}): Promise<any> {
  const r = load(name)
  const t0 = performance.now()
  try {
    const res = await fetch(url + path, { method: init.method ?? 'GET', headers: { 'content-type': 'application/json', authorization: `Bearer ${init.key ?? key}` }, ...(init.body !== undefined ? { body: JSON.stringify(init.body) } : {}) })
    const text = await res.text()
    r.requests++
    r.latencies.push(performance.now() - t0)
    if (res.status >= 500) {
      r.fivexx++
      problems.push({ at: Date.now(), what: `${name}: ${res.status} ${text.slice(0, 200)}`, status: res.status, retryable: res.status === 503 && res.headers.has('retry-after') })
    }
    return text.startsWith('{') ? JSON.parse(text) : text
  } catch (err) {
    r.errors++
    problems.push({ at: Date.now(), what: `${name}: ${String(err)}` })
    return undefined
  }
}

const until = started + SECONDS * 1000
const running = () => Date.now() < until && died === undefined
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
async function every (ms: number, fn: () => Promise<void>): Promise<void> {
  while (running()) {
    const t0 = Date.now()
    await fn()
    await sleep(Math.max(0, ms - (Date.now() - t0)))
  }
}

// Bids at full rate. The body's imp is refreshed from the adslots walk, so the bids outlive their imps' expiry; each
// answer is read as the DSP reads it: a 200 acknowledges its bids, accepted or not.
let bidBody = fixture.body
let acknowledged = 1
let acceptedBids = 1
const bids = load('POST /openrtb/v2/bid')
const cannon = autocannon({
  url: `${url}/openrtb/v2/bid`,
  connections: CONNECTIONS,
  pipelining: 1,
  duration: SECONDS,
  headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
  requests: [{
    method: 'POST',
    setupRequest: (req) => ({ ...req, body: bidBody }),
    onResponse: (status, body) => {
      if (status === 200) {
        acknowledged++
        if (/"accepted":1/.test(body)) acceptedBids++
      } else if (status >= 500) {
        bids.fivexx++
        problems.push({ at: Date.now(), what: `POST /openrtb/v2/bid: ${status} ${body.slice(0, 200)}`, status })
      }
    }
  }]
})

// /healthz on a connection of its own every 250 ms; failures with their time.
const health: Array<{ at: number, ok: boolean }> = []
const probe = () => new Promise<boolean>((resolve) => {
  const req = request(`${url}/healthz`, { agent: false, timeout: 2000 }, (res) => { res.resume(); res.on('end', () => resolve(res.statusCode === 200)) })
  req.on('error', () => resolve(false))
  req.on('timeout', () => { req.destroy(); resolve(false) })
  req.end()
})

// Resident memory of the service's process (hot threads and supervisor) and of the analytics process, every 5 s.
const memory: Array<{ at: number, service: number, analytics: number }> = []
const rss = (pid: number) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) * 1024
const analyticsPid = () => processTree(child.pid!).find((pid) => { try { return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('analytics/process.js') } catch { return false } })

let walked = 0
let cursor: string | null = null
const kills: Array<{ at: number, what: string }> = []
let keysMade = 0
let creativesMade = 0
await Promise.all([
  cannon.then(() => undefined),
  every(250, async () => { health.push({ at: Date.now(), ok: await probe() }) }),
  every(5000, async () => {
    const a = analyticsPid()
    memory.push({ at: Date.now(), service: rss(child.pid!), analytics: a !== undefined ? rss(a) : 0 })
  }),
  // A DSP walking the market: pages of 50 in both formats, and a fresh imp for the bids every walk.
  every(100, async () => {
    const format = walked % 2 === 0 ? 'openrtb' : 'screens'
    const page = await timed(`GET /openrtb/v2/adslots?format=${format}`, `/openrtb/v2/adslots?format=${format}&limit=50${cursor !== null ? `&cursor=${cursor}` : ''}`)
    const data = page?.data
    cursor = data?.cursor?.next ?? null
    if (cursor === null) walked++
    const offer = data?.bid_requests?.[0]
    if (offer !== undefined && walked % 20 === 0) {
      const next = JSON.parse(bidBody)
      next.id = offer.id
      next.seatbid[0].bid[0].impid = offer.imp[0].id
      next.seatbid[0].bid[0].price = offer.imp[0].bidfloor + 1
      bidBody = JSON.stringify(next)
    }
  }),
  every(2000, async () => {
    const n = Math.floor(Date.now() / 2000)
    const reports = ['/openrtb/v2/reports/summary?days=1', '/openrtb/v2/analytics/funnel?days=1', '/openrtb/v2/reports/screens?days=1', '/openrtb/v2/reports/timeseries?days=1', '/openrtb/v2/market/cpm-benchmarks?days=7', '/openrtb/v2/stats']
    const path = reports[n % reports.length]!
    await timed(`GET ${path.split('?')[0]}`, path)
  }),
  every(1000, async () => {
    const made = await timed('POST /openrtb/v2/keys', '/openrtb/v2/keys', { method: 'POST', body: { label: `soak ${keysMade}`, scopes: ['stats:read'] } })
    const id = made?.data?.key_id
    if (typeof id !== 'string') return
    keysMade++
    if ((await timed('GET /openrtb/v2/stats (new key)', '/openrtb/v2/stats', { key: made.data.key }))?.success !== true) problems.push({ at: Date.now(), what: 'a new key was refused' })
    await timed('DELETE /openrtb/v2/keys/:key_id', `/openrtb/v2/keys/${id}`, { method: 'DELETE' })
  }),
  every(5000, async () => {
    const made = await timed('POST /openrtb/v2/creatives', '/openrtb/v2/creatives', { method: 'POST', body: { name: `soak ${creativesMade}`, content_type: 'image/png', creative_url: `https://assets.invalid/soak-${creativesMade}.png` } })
    if (made?.success === true) creativesMade++
  }),
  every(10_000, async () => {
    const last = memory.at(-1)
    progress(`${acknowledged} bids acknowledged, ${[...routes.values()].reduce((n, r) => n + r.requests, 0)} other requests, ${problems.length} problems, service RSS ${Math.round((last?.service ?? 0) / 1e6)} MB`)
  }),
  (async () => {
    await sleep(SECONDS * 1000 / 3)
    if (!running()) return
    kills.push({ at: Date.now(), what: 'hot thread 1 ended' })
    progress('ending hot thread 1')
    await timed('POST /admin/v1/hot-threads/:thread/end', '/admin/v1/hot-threads/1/end', { method: 'POST', key: adminToken })
    await sleep(SECONDS * 1000 / 6)
    const pid = analyticsPid()
    if (!running() || pid === undefined) return
    kills.push({ at: Date.now(), what: `analytics process ${pid} killed with SIGKILL` })
    progress(`kill -9 ${pid} (the analytics process)`)
    process.kill(pid, 'SIGKILL')
  })()
])
const cannonResult = await cannon
progress('load done; waiting for ClickHouse to catch up')

// ClickHouse catches up: the funnel log empties, then the seat's funnel is asked afresh (answers live 5 s here).
const metric = async (name: string) => {
  const text = died === undefined ? await (await fetch(`${url}/metrics`)).text() : ''
  return [...text.matchAll(new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)$`, 'gm'))].reduce((n, m) => n + Number(m[1]), 0)
}
for (let i = 0; i < 240 && died === undefined && await metric('oohbid_funnel_pending_events') > 0; i++) await sleep(500)
await sleep(6000)
let funnel: any
for (let i = 0; i < 20 && died === undefined; i++) {
  funnel = (await timed('GET /openrtb/v2/analytics/funnel', '/openrtb/v2/analytics/funnel?days=1&granularity=flight'))?.data
  if (funnel !== undefined && funnel.stale !== true) break
  await sleep(1000)
}
const stats = died === undefined ? (await timed('GET /openrtb/v2/stats', '/openrtb/v2/stats'))?.data : undefined
const restarts = { analytics: await metric('oohbid_analytics_restarts_total'), threads: stderr.filter((l) => l.includes('hot thread stopped; restarting it')).length }
const deliveries = await receiverCount()

// The checks.
const inWindow = (at: number) => kills.some((k) => at >= k.at && at <= k.at + KILL_WINDOW_MS)
const fivexx = cannonResult['5xx'] + [...routes.values()].reduce((n, r) => n + r.fivexx, 0)
const notJson = stderr.filter((l) => { try { JSON.parse(l); return false } catch { return true } })
const healthFailures = health.filter((h) => !h.ok && !inWindow(h.at))
const errorsOutside = problems.filter((p) => !inWindow(p.at) && !/: [1-4]\d\d /.test(p.what))
// The documented answer while ClickHouse cannot be reached, 503 with Retry-After, is expected after the analytics
// process's kill; any other 5xx, or one outside the kill windows, is a failure.
const unexcused = problems.filter((p) => (p.status ?? 0) >= 500 && !(p.retryable === true && inWindow(p.at)))
const secondHalf = memory.filter((m) => m.at >= started + SECONDS * 500)
const meanOf = (xs: typeof memory) => xs.reduce((n, m) => n + m.service, 0) / Math.max(1, xs.length)
const head = meanOf(secondHalf.slice(0, 6))
const tail = meanOf(secondHalf.slice(-6))
const growth = head > 0 ? tail / head - 1 : 0
const funnelBids = funnel?.stages?.bid_received
const unanswered = cannonResult.errors + cannonResult.timeouts + CONNECTIONS
const checks: Array<[string, boolean, string]> = [
  ['the service never died', died === undefined, died ?? 'alive'],
  ['/healthz never failed outside the kill windows', healthFailures.length === 0, `${health.filter((h) => !h.ok).length} failed of ${health.length}, ${healthFailures.length} outside`],
  ['no 5xx but a 503 with Retry-After in a kill window', unexcused.length === 0, `${fivexx} in all, ${unexcused.length} other`],
  ['no request failed outside the kill windows', errorsOutside.length === 0, errorsOutside.slice(0, 3).map((p) => p.what).join('; ') || 'none'],
  ['stderr holds only JSON lines', notJson.length === 0, notJson.length === 0 ? `${stderr.length} lines` : notJson.slice(0, 3).join(' / ')],
  // A bid whose answer never arrived (its connection cut by the thread's end, or in flight when autocannon stopped,
  // one per connection) may be stored all the same: the service may count up to that many more, never fewer.
  ['every acknowledged bid is in GET /stats', stats?.bids >= acknowledged && stats?.bids <= acknowledged + unanswered && stats?.accepted >= acceptedBids, `acknowledged ${acknowledged} (accepted ${acceptedBids}), ${unanswered} sent without an answer; /stats bids ${stats?.bids} (accepted ${stats?.accepted})`],
  ['and in the funnel, exactly as /stats, once ClickHouse caught up', funnelBids === stats?.bids, `funnel bid_received ${JSON.stringify(funnelBids)}`],
  ['resident memory grew at most 10% over the last half', growth <= 0.10, `${(growth * 100).toFixed(1)}% (${Math.round(head / 1e6)} MB to ${Math.round(tail / 1e6)} MB)`],
  ['webhooks were delivered', deliveries > 0, `${deliveries}`]
]

const rows: Array<Record<string, string | number>> = [
  { route: `POST /openrtb/v2/bid (autocannon, c=${CONNECTIONS})`, requests: cannonResult.requests.total, 'req/s': Math.round(cannonResult.requests.average), 'p99 ms': cannonResult.latency.p99, '5xx': cannonResult['5xx'], errors: cannonResult.errors },
  ...[...routes].filter(([name]) => name !== 'POST /openrtb/v2/bid').map(([name, r]) => ({ route: name, requests: r.requests, 'req/s': Math.round(r.requests / SECONDS * 10) / 10, 'p99 ms': Math.round(percentile(r.latencies, 0.99)), '5xx': r.fivexx, errors: r.errors }))
]
const minute = (m: { at: number }) => Math.floor((m.at - started) / 60_000)
const byMinute = [...new Map(memory.map((m) => [minute(m), m])).values()]
const note = [
  `${SECONDS} s, demo fleet of ${FLEET} screens, ${new Date().toISOString().slice(0, 10)}. Kills: ${kills.map((k) => `${k.what} at ${Math.round((k.at - started) / 1000)} s`).join('; ') || 'none'}. Restarts: ${restarts.threads} hot thread, ${restarts.analytics} analytics process. Webhook deliveries received: ${deliveries}; keys made and revoked: ${keysMade}; creatives made: ${creativesMade}.`,
  '',
  '| check | result | measured |',
  '|---|---|---|',
  ...checks.map(([what, passed, measured]) => `| ${what} | ${passed ? 'pass' : 'FAIL'} | ${measured} |`),
  '',
  'Resident memory (MB), the service process (hot threads and supervisor) and the analytics process, at each minute:',
  '',
  '| minute | service | analytics |',
  '|---|---|---|',
  ...byMinute.map((m) => `| ${minute(m)} | ${Math.round(m.service / 1e6)} | ${Math.round(m.analytics / 1e6)} |`)
].join('\n')
const title = `Soak: requests, errors and p99 per route over ${SECONDS} s (\`SOAK_SECONDS=${SECONDS} npm run bench -- soak\`)`
// The README's figures are a full run's; a shorter one (CI's) is printed only.
if (SECONDS >= 600) saveTable('soak', title, rows, note)
else console.log(`\n${title}\n\n${rows.map((r) => JSON.stringify(r)).join('\n')}\n\n${note}`)

if (died === undefined) {
  child.kill('SIGTERM')
  await new Promise((resolve) => child.once('exit', resolve))
}
await receiver.stop()
const failed = checks.filter(([, passed]) => !passed)
if (failed.length === 0) {
  rmSync(dataDir, { recursive: true, force: true })
  console.log('soak: every check passed')
} else {
  writeFileSync(join(dataDir, 'soak-stderr.log'), stderr.join('\n'))
  console.error(`soak: ${failed.length} check(s) failed: ${failed.map(([what]) => what).join('; ')}; the service's data and stderr are kept in ${dataDir}`)
  for (const p of problems.slice(0, 20)) console.error(`  ${new Date(p.at).toISOString()} ${p.what}`)
  console.error(`the service's last stderr lines:\n${[...stderr, partial].slice(-20).join('\n')}`)
  process.exitCode = 1
}
