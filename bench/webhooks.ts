// Benchmark: webhook deliveries per second to a local HTTPS receiver (its own process). Events are made the way a
// busy partner makes them: impression callbacks in batches of 1000 (POST /v1/partner/impressions), each an
// impression.delivered for the seat. Live: events are made and delivered at once (the lag from event to arrival).
// Backlog: the receiver holds its answers while the events are made, then releases them, and the queue drains to 1
// and to 3 subscriptions. The baseline, in the same run, is a bare Node https client posting signed bodies of the
// same size to the same receiver over as many keep-alive connections as oohbid uses per receiver (16): what this
// machine can deliver at best.
import { readFileSync } from 'node:fs'
import https from 'node:https'
import { fileURLToPath } from 'node:url'
import { performance } from 'node:perf_hooks'
import { signRequest } from '../src/auth/hmac.js'
import { benchCreative, benchScreen, jsonClient } from './lib/fixtures.js'
import { startBaseline, startOohbid } from './lib/processes.js'
import { saveTable, type Bar } from './lib/report.js'
import { benchSeat } from './lib/seat.js'

const events = Number(process.env.BENCH_EVENTS ?? 20_000)
const ca = fileURLToPath(new URL('../../test/fixtures/tls/ca.pem', import.meta.url))
const receiver = await startBaseline('webhook-receiver')
// The receiver's certificate is signed by the test CA, which this process trusts through its agent.
const agent = new https.Agent({ keepAlive: true, maxSockets: 16, ca: readFileSync(ca) })
const toReceiver = (method: string, path: string, body?: string, headers: Record<string, string | number> = {}) => new Promise<string>((resolve, reject) => {
  const req = https.request(receiver.url + path, { method, agent, headers }, (res) => {
    let text = ''
    res.on('data', (d) => { text += d })
    res.on('end', () => resolve(text))
  })
  req.on('error', reject)
  req.end(body)
})
const stats = async () => JSON.parse(await toReceiver('GET', '/stats')) as { count: number, p50: number, p99: number }

/** Waits until the receiver has `total` requests, printing progress; the seconds it took from `started`. */
async function until (total: number, started: number, label: string): Promise<number> {
  for (;;) {
    const { count } = await stats()
    const s = (performance.now() - started) / 1000
    if (process.stdout.isTTY) process.stdout.write(`\r${label}: ${count}/${total} delivered, ${Math.round(count / s)}/s `)
    if (count >= total) {
      if (process.stdout.isTTY) process.stdout.write('\n')
      return s
    }
    if (s > 600) throw new Error(`${label}: only ${count} of ${total} deliveries after 10 minutes`)
    await new Promise((r) => setTimeout(r, 200))
  }
}

// Baseline: signed POSTs of the same size from a bare client.
const sampleBody = JSON.stringify({ event: 'impression.delivered', delivered_at: new Date().toISOString(), data: { event_id: 'evt_00000000-0000-0000-0000-000000000000', occurred_at: new Date().toISOString(), object: { proof_id: 'prf_000000000000000000000000', impression_id: 'bench-0', ad_id: 'cr_00000000000000000000000000000000', screen_id: 'scr_00000000000000000000', device_id: 'bench-1', timestamp: Date.now(), verification_tier: 'impression_callback', duration_ms: 15000, completed: true, givt_passed: true, signature: `ed25519=${'0'.repeat(128)}`, partner_id: 'prt_0000000000000000', reconciled: false, partner_impressions_today: 1 } } })
const post = async () => {
  const body = sampleBody.replace(/"occurred_at":"[^"]+"/, `"occurred_at":"${new Date().toISOString()}"`)
  const t = Math.floor(Date.now() / 1000)
  await toReceiver('POST', '/hook', body, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), 'x-service-signature': signRequest('whsec_bench', t, body) })
}
await toReceiver('DELETE', '/stats')
const baseStart = performance.now()
let sent = 0
await Promise.all(Array.from({ length: 16 }, async () => { while (sent < events) { sent++; await post() } }))
const baseSeconds = await until(events, baseStart, 'bare https client')
const base = await stats()

// A held answer must outlast the time it takes to make the backlog.
const oohbid = await startOohbid({ ALLOW_PRIVATE_CALLBACK_URLS: '1', NODE_EXTRA_CA_CERTS: ca, WEBHOOK_TIMEOUT_MS: '30000' })
const call = jsonClient(oohbid.url)
const { partnerKey } = await benchScreen(call)
const key = await benchSeat(oohbid.url, oohbid.adminToken, 'bench_hooks', ['campaigns', 'creatives'])
await call('/admin/v1/seats/bench_hooks/approve', { method: 'POST', key: oohbid.adminToken, body: {} })
const creativeId = await benchCreative(call, key, oohbid.adminToken)

let impression = 0
/** Sends `events` impression callbacks in batches of 1000; the seconds the uploads took. */
async function upload (): Promise<number> {
  const started = performance.now()
  for (let done = 0; done < events; done += 1000) {
    const now = Date.now()
    const impressions = Array.from({ length: Math.min(1000, events - done) }, () => ({ adId: creativeId, impressionId: `bench-${++impression}`, deviceId: 'bench-1', duration: 15, completed: true, timestamp: now - 60_000 }))
    const r = await call('/v1/partner/impressions', { method: 'POST', key: partnerKey, body: { impressions } })
    if (r.accepted !== impressions.length) throw new Error(`impressions refused: ${JSON.stringify(r).slice(0, 300)}`)
  }
  return (performance.now() - started) / 1000
}

/** Waits until the service has `total` notices queued (a backlog fully built). */
async function queued (total: number): Promise<void> {
  for (;;) {
    const metrics = await fetch(`${oohbid.url}/metrics`).then((r) => r.text())
    const pending = Number(/^oohbid_notices_pending (\d+)/m.exec(metrics)?.[1] ?? 0)
    if (process.stdout.isTTY) process.stdout.write(`\rbacklog: ${pending}/${total} queued `)
    if (pending >= total) return
    await new Promise((r) => setTimeout(r, 200))
  }
}

const perSecond = (n: number, s: number) => Math.round(n / s)
const baseRate = events / baseSeconds
const rows: Array<Record<string, string | number>> = [{ target: 'bare https client (baseline)', subscriptions: 1, deliveries: events, seconds: Number(baseSeconds.toFixed(2)), 'deliveries/s': perSecond(events, baseSeconds), 'vs baseline': '1.00x', 'p50 lag ms': base.p50, 'p99 lag ms': base.p99 }]
const subscribe = async (n: number) => {
  const existing = (await call('/openrtb/v2/webhooks', { key })).webhooks.length as number
  for (let i = existing; i < n; i++) await call('/openrtb/v2/webhooks', { method: 'POST', key, body: { url: `${receiver.url}/hook${i}`, events: ['impression.delivered'] } })
}

await subscribe(1)
await toReceiver('DELETE', '/stats')
let started = performance.now()
const liveUpload = await upload()
const liveSeconds = await until(events, started, 'live, 1 subscription')
const live = await stats()
rows.push({ target: `oohbid live (events made meanwhile: ${perSecond(events, liveUpload)} impression callbacks/s)`, subscriptions: 1, deliveries: events, seconds: Number(liveSeconds.toFixed(2)), 'deliveries/s': perSecond(events, liveSeconds), 'vs baseline': `${(events / liveSeconds / baseRate).toFixed(2)}x`, 'p50 lag ms': live.p50, 'p99 lag ms': live.p99 })

for (const subscriptions of [1, 3]) {
  await subscribe(subscriptions)
  const total = events * subscriptions
  await toReceiver('PUT', '/hold')
  await upload()
  await queued(total)
  await toReceiver('DELETE', '/stats')
  started = performance.now()
  await toReceiver('DELETE', '/hold')
  const seconds = await until(total, started, `backlog, ${subscriptions} subscription${subscriptions > 1 ? 's' : ''}`)
  rows.push({ target: `oohbid backlog of ${total.toLocaleString('en-US')}`, subscriptions, deliveries: total, seconds: Number(seconds.toFixed(2)), 'deliveries/s': perSecond(total, seconds), 'vs baseline': `${(total / seconds / baseRate).toFixed(2)}x`, 'p50 lag ms': '-', 'p99 lag ms': '-' })
}
const log = await call('/openrtb/v2/webhooks/deliveries?status=succeeded&limit=1', { key })
if (log.deliveries.length !== 1) throw new Error('the delivery log does not show the deliveries')
await Promise.all([oohbid.stop(), receiver.stop()])
agent.destroy()

const bars: Bar[] = rows.map((r) => ({ label: `${String(r.target).split(' (')[0]}, ${r.subscriptions} sub`, value: Number(r['deliveries/s']), text: `${Number(r['deliveries/s']).toLocaleString('en-US')}/s (${r['vs baseline']})`, baseline: String(r.target).startsWith('bare') }))
saveTable('webhooks', 'Webhook deliveries per second to a local HTTPS receiver (loopback, 16 connections)', rows,
  'Each delivery is one signed HTTPS POST acknowledged with 200, recorded in the delivery log. Live runs from the first impression upload to the last delivery, so it includes making the events (proof signing, the outbox); lag is from an event\'s occurred_at to its arrival. Backlog runs from the release of a receiver that held its answers until every queued delivery arrived.',
  { webhooks: { title: 'Webhook deliveries per second (loopback HTTPS)', bars } })
