import { createHmac } from 'node:crypto'
import Stripe from 'stripe'
import t from 'tap'
import { schemas } from '../src/generated/schemas.js'
import * as validators from '../src/generated/validators.js'
import { approvedCreative } from './helpers/creatives.js'
import { deviceBody, registerDevices, registerPartner } from './helpers/fleet.js'
import { startDnsServer } from './helpers/dns-server.js'
import { startReceiver, type Received, type Receiver, type ReceiverOptions } from './helpers/receiver.js'
import { startTestService, type TestService } from './helpers/service.js'

// Webhook delivery as a receiver sees it: real HTTPS on loopback (the test CA through NODE_EXTRA_CA_CERTS), every
// signature checked with Stripe's own verifier (the standard Stripe-style algorithm), every body against its schema.

const SUBSCRIBABLE = [...schemas.WebhookEventType.enum]
const TOLERANCE = 300

type Validator = ((data: unknown) => boolean) & { errors?: unknown }
const validator = (title: string) => (validators as unknown as Record<string, Validator>)[title]!

/** The schema of data.object for an event, found by its x-events annotation. */
function objectSchemaOf (event: string): string {
  const found = Object.values(schemas).find((s) => ((s as { 'x-events'?: string[] })['x-events'] ?? []).includes(event))
  if (found === undefined) throw new Error(`no schema documents ${event}`)
  return found.title
}

/** Verifies a delivery the way a Stripe-style receiver does, at the given time; returns the parsed body. */
function verify (r: Received, secret: string, nowMs: number): any {
  return Stripe.webhooks.constructEvent(r.body, String(r.headers['x-service-signature']), secret, TOLERANCE, undefined, nowMs)
}

/** Everything dispatched and every attempt now due made. */
async function flush (svc: TestService): Promise<void> {
  svc.service.webhooks.drain()
  await svc.service.sender.idle()
}

interface World { svc: TestService, receiver: Receiver, key: string, secret: string, webhookId: string, prefix: string }

/** A service that may call loopback, an HTTPS receiver, and seat hooks with a webhook_url and a subscription to every event. */
async function world (t: Parameters<typeof startTestService>[0], env: Record<string, string> = {}, options: ReceiverOptions = {}): Promise<World> {
  const svc = await startTestService(t, { ALLOW_PRIVATE_CALLBACK_URLS: '1', HEARTBEAT_TIMEOUT_SECONDS: '90', PICKUP_SECONDS: '30', ...env })
  const receiver = await startReceiver(t, true, options)
  const { reply, key } = await svc.onboard('hooks', { webhook_url: `${receiver.url}/general` })
  await svc.admin('POST', '/admin/v1/seats/hooks/approve')
  const sub = await svc.request('POST', '/openrtb/v2/webhooks', { key, body: { url: `${receiver.url}/sub`, events: SUBSCRIBABLE } })
  return { svc, receiver, key, secret: sub.body.data.secret, webhookId: sub.body.data.webhook.webhook_id, prefix: reply.body.data.api_key.prefix }
}

const at = (receiver: Receiver, path: string) => receiver.received.filter((r) => r.path === path)

t.test('every event of the list reaches the subscription, signed, with the documented headers and data', async (t) => {
  const w = await world(t)
  const { svc, key } = w
  const partner = await registerPartner(svc)
  const [screenId] = Object.values(await registerDevices(svc, partner, [deviceBody('hook-1', { slot_duration_seconds: 15 })]))
  const embed = new URL((await svc.request('GET', '/v1/partner/devices', { key: partner.key })).body.data.devices[0].embed_url).pathname
  await svc.request('POST', '/v1/partner/devices/hook-1/heartbeat', { key: partner.key })

  const creative = await approvedCreative(svc, key, 'hooked ad')
  // The screen plays by its local date (Austin), the campaign runs by UTC days: a flight covering both works at any hour.
  const utc = new Date(svc.clock.now()).toISOString().slice(0, 10)
  const local = new Intl.DateTimeFormat('en-CA', { timeZone: 'America/Chicago' }).format(svc.clock.now())
  const [start, end] = [utc, local].sort()
  const campaign = await svc.request('POST', '/openrtb/v2/campaigns', { key, body: { creative_id: creative, name: 'Hooked', budget_usd: 100, start_date: start, end_date: end, goal_impressions: 1 } })
  t.equal(campaign.status, 201)
  const assign = await svc.request('POST', '/openrtb/v2/campaigns/assign', { key, body: { creative_id: creative, screen_ids: [screenId], campaign_id: campaign.body.data.campaign_id, start_date: start, end_date: end, spots_per_day: 10 } })
  t.equal(assign.status, 201)
  svc.clock.advance(31_000)
  const spot = (await svc.request('POST', `${embed}/spots`, { body: {} })).body.data
  t.equal(spot.creative.creative_id, creative, 'the assignment plays once picked up')
  await svc.request('POST', `${embed}/spots/${spot.spot_id}/events`, { body: { event: 'render_started' } })
  const done = (await svc.request('POST', `${embed}/spots/${spot.spot_id}/events`, { body: { event: 'play_completed', duration_ms: 15_000 } })).body.data
  const proof = (await svc.request('GET', `/v1/advertiser/proof/proofs/${done.proof_id}`, { key })).body.data
  const callback = await svc.request('POST', '/v1/partner/impressions', { key: partner.key, body: { impressions: [{ adId: creative, impressionId: proof.impressionId, deviceId: 'hook-1', duration: 15, completed: true, timestamp: proof.timestamp }] } })
  t.match(callback.body.data, { duplicates: 1 }, 'the partner reports the same play')
  svc.clock.advance(91_000)
  await svc.service.runJobs()
  await svc.request('POST', '/v1/partner/devices/hook-1/heartbeat', { key: partner.key })
  await flush(svc)

  const sub = at(w.receiver, '/sub')
  t.same([...new Set(sub.map((r) => r.headers['x-service-event']))].sort(), [...SUBSCRIBABLE].sort(), 'every subscribable event arrived')
  for (const r of sub) {
    const event = String(r.headers['x-service-event'])
    const signature = String(r.headers['x-service-signature'])
    const ts = Number(r.headers['x-service-timestamp'])
    t.equal(r.method, 'POST')
    t.equal(r.headers['content-type'], 'application/json')
    t.match(r.headers['x-service-delivery-id'], /^del_[0-9a-f]{24}$/)
    t.equal(r.headers['x-service-webhook-id'], w.webhookId)
    t.match(signature, new RegExp(`^t=${ts},v0=[0-9a-f]{64},v1=[0-9a-f]{64}$`), `${event}: t, v0 and v1`)
    const body = verify(r, w.secret, svc.clock.now())
    t.equal(body.event, event, `${event}: verifies with Stripe's verifier`)
    t.equal(body.delivered_at, new Date(ts * 1000).toISOString(), 'delivered_at is the attempt time')
    const v0 = createHmac('sha256', w.secret).update(`${ts}.${String(r.headers['x-service-delivery-id'])}.${r.body}`).digest('hex')
    t.ok(signature.includes(`v0=${v0}`), 'v0 binds the delivery id as documented')
    t.ok(validator('WebhookPayload')(body), `${event}: the envelope matches WebhookPayload`)
    const objectSchema = objectSchemaOf(event)
    t.ok(validator(objectSchema)(body.data.object), `${event}: data.object matches ${objectSchema}`)
  }
  const by = (event: string) => sub.filter((r) => r.headers['x-service-event'] === event).map((r) => JSON.parse(r.body).data.object)
  t.match(by('impression.verified'), [{ proof_id: done.proof_id, verification_tier: 'signed', screen_id: screenId }])
  t.match(by('impression.delivered'), [{ proof_id: done.proof_id, reconciled: true, partner_id: partner.id }])
  const allocated = by('campaign.allocated')
  t.match(allocated.find((o) => o.assignment_id === null), { campaign_id: campaign.body.data.campaign_id, screen_ids: null, matching_screens: 1 }, 'the campaign')
  t.match(allocated.find((o) => o.assignment_id !== null), { assignment_id: assign.body.data.assignment_id, campaign_id: campaign.body.data.campaign_id, screen_ids: [screenId] }, 'and its assignment')
  t.match(by('screen.offline'), [{ screen_id: screenId, status: 'offline' }], 'the seat playing on the screen hears it went offline')
  t.match(by('screen.online'), [{ screen_id: screenId, status: 'online' }])
  t.match(by('campaign.completed'), [{ campaign_id: campaign.body.data.campaign_id, reason: 'goal_impressions reached', impressions: 1 }])
  t.same(by('creative.moderation.completed').map((o) => o.status).sort(), ['approved', 'rejected'], 'the automatic result and the review')
  const eventIds = sub.map((r) => JSON.parse(r.body).data.event_id)
  t.equal(new Set(eventIds).size, sub.length, 'each event once')

  const general = at(w.receiver, '/general')
  t.same([...new Set(general.map((r) => r.headers['x-service-event']))].sort(), ['campaign.allocated', 'campaign.completed', 'campaign.started', 'creative.moderation.completed'], 'webhook_url gets the general events only')
  for (const r of general) {
    t.equal(r.headers['x-service-key-prefix'], w.prefix, 'signed with the API key it names')
    t.ok(validator('WebhookPayload')(verify(r, w.key, svc.clock.now())), 'verifies with the API key as the secret')
  }

  const log = (await svc.request('GET', '/openrtb/v2/webhooks/deliveries?limit=200', { key })).body.data
  t.equal(log.deliveries.length, sub.length + general.length, 'the log holds every delivery')
  t.ok(log.deliveries.every((d: any) => validator('WebhookDelivery')(d) && d.status === 'succeeded' && d.attempts === 1 && d.history[0].response_status === 200), 'all succeeded on the first attempt')
  const onlyGeneral = (await svc.request('GET', '/openrtb/v2/webhooks/deliveries?webhook_id=webhook_url&limit=200', { key })).body.data.deliveries
  t.equal(onlyGeneral.length, general.length, 'webhook_id=webhook_url filters the webhook_url deliveries')
  t.ok(onlyGeneral.every((d: any) => d.webhook_id === null))
  const offline = (await svc.request('GET', '/openrtb/v2/webhooks/deliveries?event=screen.offline', { key })).body.data.deliveries
  t.match(offline, [{ event: 'screen.offline', webhook_id: w.webhookId, url: `${w.receiver.url}/sub` }])
  const hooks = (await svc.request('GET', '/openrtb/v2/webhooks', { key })).body.data.webhooks
  t.match(hooks, [{ webhook_id: w.webhookId, status: 'active', failing_since: null, last_success_at: /Z$/ }], 'a healthy subscription')
})

t.test('signatures: a changed body, a wrong secret and an old timestamp are refused; retries are signed afresh', async (t) => {
  let refused = false
  const w = await world(t, {}, { respond: (r) => r.path === '/sub' && !refused ? (refused = true, 503) : 200 })
  const { svc, key } = w
  await approvedCreative(svc, key)
  await flush(svc)
  const [first, ...rest] = at(w.receiver, '/sub')
  t.equal(rest.length, 1, 'the second event went through; the first was answered 503')
  const firstT = Number(first!.headers['x-service-timestamp']) * 1000
  t.ok(verify(first!, w.secret, firstT + 299_000), 'accepted within the 300 s tolerance')
  t.throws(() => verify(first!, w.secret, firstT + 301_000), /tolerance/, 'refused 301 s later')
  t.throws(() => verify({ ...first!, body: first!.body.replace('"event"', '"Event"') }, w.secret, firstT), /No signatures found/, 'a changed body is refused')
  t.throws(() => verify(first!, 'whsec_wrong', firstT), /No signatures found/, 'another secret is refused')
  t.throws(() => verify(first!, w.key, firstT), /No signatures found/, 'the API key does not sign subscriptions')

  const pending = (await svc.request('GET', '/openrtb/v2/webhooks/deliveries?status=retrying', { key })).body.data.deliveries
  t.match(pending, [{ delivery_id: first!.headers['x-service-delivery-id'], attempts: 1, response_status: 503, error: 'HTTP 503' }])
  const wait = Date.parse(pending[0].next_attempt_at) - svc.clock.now()
  t.ok(wait >= 8_000 && wait <= 12_000, `first retry after 10 s +-20% (${wait} ms)`)
  svc.clock.advance(2 * 3_600_000)
  await svc.service.sender.idle()
  const retry = at(w.receiver, '/sub').at(-1)!
  t.equal(retry.headers['x-service-delivery-id'], first!.headers['x-service-delivery-id'], 'the same delivery id')
  t.equal(retry.headers['x-service-attempt'], '2')
  t.equal(Number(retry.headers['x-service-timestamp']) * 1000, Math.floor(svc.clock.now() / 1000) * 1000, 'stamped with the time of the retry')
  t.equal(verify(retry, w.secret, svc.clock.now()).data.event_id, JSON.parse(first!.body).data.event_id, 'verifies two hours later: the same event')
})

t.test('retries: timeouts, redirects and errors are retried on the schedule until the receiver recovers', async (t) => {
  // The subscription's attempts: 500, no answer in time, a redirect, then 200.
  const attempt = (r: Received) => r.path === '/sub' ? Number(r.headers['x-service-attempt']) : 0
  const w = await world(t, { WEBHOOK_TIMEOUT_MS: '300' }, {
    respond: (r) => ({ 1: 500, 3: 302 } as Record<number, number>)[attempt(r)] ?? 200,
    delay: (r) => attempt(r) === 2 ? 1000 : 0
  })
  const { svc, key } = w
  const r = await svc.request('POST', '/openrtb/v2/creatives', { key, body: { name: 'retried', content_type: 'image/png', creative_url: 'https://assets.invalid/x.png' } })
  await svc.service.moderator.idle()
  await flush(svc)
  const mine = () => (svc.request('GET', `/openrtb/v2/webhooks/deliveries?webhook_id=${w.webhookId}`, { key })).then((x) => x.body.data.deliveries[0])
  const schedule = [10, 40, 160, 640]
  for (let i = 0; ; i++) {
    const d = await mine()
    if (d.status === 'succeeded') break
    t.equal(d.status, 'retrying')
    const wait = Date.parse(d.next_attempt_at) - Date.parse(d.last_attempt_at)
    t.ok(wait >= schedule[i]! * 800 && wait <= schedule[i]! * 1200, `retry ${i + 1} waits ${schedule[i]} s +-20% (${wait} ms)`)
    svc.clock.set(Date.parse(d.next_attempt_at))
    await svc.service.sender.idle()
    if (i > 5) t.fail('never recovered')
  }
  const d = await mine()
  t.equal(d.history.at(-1).response_status, 200, 'delivered once the receiver recovered')
  t.ok(d.history.some((h: any) => h.response_status === null && /no answer within 300 ms/.test(h.error)), 'a timeout was a failed attempt')
  t.ok(d.history.some((h: any) => h.response_status === 302), 'a redirect was a failed attempt')
  t.equal(w.receiver.received.filter((x) => x.path === '/moved').length, 0, 'and was not followed')
  const ids = new Set(at(w.receiver, '/sub').map((x) => x.headers['x-service-delivery-id']))
  t.equal(ids.size, 1, `${d.attempts} attempts, one delivery id`)
  t.match(JSON.parse(at(w.receiver, '/sub').at(-1)!.body).data.object, { creative_id: r.body.data.creative_id })
  const hook = (await svc.request('GET', '/openrtb/v2/webhooks', { key })).body.data.webhooks[0]
  t.match(hook, { status: 'active', failing_since: null }, 'a success ends the failing run')
})

t.test('a subscription failing through the whole schedule is disabled, with webhook.disabled for the seat', async (t) => {
  const w = await world(t, {}, { respond: (r) => r.path === '/dead' ? 500 : 200 })
  const { svc, key } = w
  const dead = await svc.request('POST', '/openrtb/v2/webhooks', { key, body: { url: `${w.receiver.url}/dead`, events: ['creative.moderation.completed'] } })
  const deadId = dead.body.data.webhook.webhook_id
  const r = await svc.request('POST', '/openrtb/v2/creatives', { key, body: { name: 'dead end', content_type: 'image/png', creative_url: 'https://assets.invalid/x.png' } })
  t.equal(r.status, 201)
  await svc.service.moderator.idle()
  await flush(svc)
  const started = svc.clock.now()
  for (let i = 0; i < 12; i++) {
    const d = (await svc.request('GET', `/openrtb/v2/webhooks/deliveries?webhook_id=${deadId}`, { key })).body.data.deliveries[0]
    if (d.status !== 'retrying') break
    svc.clock.set(Date.parse(d.next_attempt_at))
    await svc.service.sender.idle()
  }
  const d = (await svc.request('GET', `/openrtb/v2/webhooks/deliveries?webhook_id=${deadId}`, { key })).body.data.deliveries[0]
  t.match(d, { status: 'failed', attempts: 10, next_attempt_at: null, response_status: 500 })
  const days = (svc.clock.now() - started) / 86_400_000
  t.ok(days > 2 && days < 3.2, `ten attempts over ${days.toFixed(2)} days`)
  const hooks = (await svc.request('GET', '/openrtb/v2/webhooks', { key })).body.data.webhooks
  const disabled = hooks.find((h: any) => h.webhook_id === deadId)
  t.match(disabled, { status: 'disabled', disabled_at: /Z$/, disabled_reason: /No delivery succeeded for \d+ days: del_\w+ \(creative.moderation.completed\) failed all 10 attempts, the last with HTTP 500/, last_success_at: null })
  t.match(hooks.find((h: any) => h.webhook_id === w.webhookId), { status: 'active' }, 'the seat\'s healthy subscription is untouched')
  await flush(svc)
  const notice = at(w.receiver, '/general').filter((x) => x.headers['x-service-event'] === 'webhook.disabled')
  t.equal(notice.length, 1, 'webhook_url hears about it')
  const body = verify(notice[0]!, w.key, svc.clock.now())
  t.ok(validator('WebhookDisabledEvent')(body.data.object))
  t.match(body.data.object, { webhook_id: deadId, url: `${w.receiver.url}/dead`, delivery_id: d.delivery_id, reason: disabled.disabled_reason })
  const before = at(w.receiver, '/dead').length
  await svc.request('POST', '/openrtb/v2/creatives', { key, body: { name: 'after', content_type: 'image/png', creative_url: 'https://assets.invalid/y.png' } })
  await svc.service.moderator.idle()
  await flush(svc)
  t.equal(at(w.receiver, '/dead').length, before, 'a disabled subscription gets nothing more')
  t.equal((await svc.request('POST', '/openrtb/v2/webhooks', { key, body: { url: `${w.receiver.url}/sub2`, events: ['campaign.started'] } })).status, 201, 'and does not count toward the limit')
})

t.test('deleting a subscription cancels what is queued for it', async (t) => {
  const w = await world(t, {}, { respond: (r) => r.path === '/sub' ? 503 : 200 })
  const { svc, key } = w
  await svc.request('POST', '/openrtb/v2/creatives', { key, body: { name: 'queued', content_type: 'image/png', creative_url: 'https://assets.invalid/x.png' } })
  await svc.service.moderator.idle()
  await flush(svc)
  t.match((await svc.request('GET', `/openrtb/v2/webhooks/deliveries?webhook_id=${w.webhookId}`, { key })).body.data.deliveries, [{ status: 'retrying' }])
  t.equal((await svc.request('DELETE', `/openrtb/v2/webhooks/${w.webhookId}`, { key })).status, 200)
  t.match((await svc.request('GET', `/openrtb/v2/webhooks/deliveries?webhook_id=${w.webhookId}`, { key })).body.data.deliveries, [{ status: 'canceled', error: 'the subscription was deleted', next_attempt_at: null }])
  const sent = at(w.receiver, '/sub').length
  svc.clock.advance(86_400_000)
  await svc.service.sender.idle()
  t.equal(at(w.receiver, '/sub').length, sent, 'nothing more is sent to it')
})

t.test('ownership: a seat hears only its own events and sees only its own log', async (t) => {
  const w = await world(t)
  const { svc, key } = w
  const other = await svc.onboard('hooks_rival')
  const rivalReceiver = await startReceiver(t, true)
  const rivalHook = await svc.request('POST', '/openrtb/v2/webhooks', { key: other.key, body: { url: `${rivalReceiver.url}/rival`, events: ['creative.moderation.completed'] } })
  await approvedCreative(svc, key)
  await flush(svc)
  t.equal(rivalReceiver.received.length, 0, 'the rival hears nothing of hooks\' creatives')
  t.equal((await svc.request('GET', '/openrtb/v2/webhooks/deliveries', { key: other.key })).body.data.deliveries.length, 0, 'and sees none of its deliveries')
  t.equal((await svc.request('GET', `/openrtb/v2/webhooks/deliveries?webhook_id=${w.webhookId}`, { key: other.key })).body.data.deliveries.length, 0, 'not even by naming its webhook')
  t.match(await svc.request('DELETE', `/openrtb/v2/webhooks/${w.webhookId}`, { key: other.key }), { status: 404, body: { error_code: 'webhook_not_found' } })
  t.match(await svc.request('DELETE', `/openrtb/v2/webhooks/${rivalHook.body.data.webhook.webhook_id}`, { key }), { status: 404, body: { error_code: 'webhook_not_found' } })
  await approvedCreative(svc, other.key)
  await flush(svc)
  t.equal(rivalReceiver.received.length, 2, 'the rival hears its own')
  t.ok(at(w.receiver, '/sub').every((r) => JSON.parse(r.body).data.object.creative_id !== undefined) && at(w.receiver, '/sub').length === 2, 'and hooks still only its own two')
})

t.test('the delivery log: filters, pages, bad input, 7 days', async (t) => {
  const w = await world(t)
  const { svc, key } = w
  for (let i = 0; i < 3; i++) {
    await svc.request('POST', '/openrtb/v2/creatives', { key, body: { name: `c${i}`, content_type: 'image/png', creative_url: `https://assets.invalid/${i}.png` } })
    await svc.service.moderator.idle()
    svc.service.webhooks.drain()
    svc.clock.advance(1000)
  }
  await flush(svc)
  const all = (await svc.request('GET', '/openrtb/v2/webhooks/deliveries', { key })).body.data.deliveries
  t.equal(all.length, 6, 'three events, two endpoints each')
  t.ok(all.every((d: any, i: number) => i === 0 || d.created_at <= all[i - 1].created_at), 'newest first')
  const seen: string[] = []
  let cursor: string | null = null
  do {
    const page: any = (await svc.request('GET', `/openrtb/v2/webhooks/deliveries?limit=4${cursor ? `&cursor=${cursor}` : ''}`, { key })).body.data
    seen.push(...page.deliveries.map((d: any) => d.delivery_id))
    cursor = page.cursor.next
  } while (cursor !== null)
  t.same(seen, all.map((d: any) => d.delivery_id), 'pages walk the log once')
  const middle = all[2].created_at
  const since = (await svc.request('GET', `/openrtb/v2/webhooks/deliveries?since=${middle}`, { key })).body.data.deliveries
  t.ok(since.length >= 2 && since.every((d: any) => d.created_at >= middle), 'since')
  const until = (await svc.request('GET', `/openrtb/v2/webhooks/deliveries?until=${middle}`, { key })).body.data.deliveries
  t.ok(until.length >= 1 && until.every((d: any) => d.created_at < middle), 'until')
  t.equal((await svc.request('GET', '/openrtb/v2/webhooks/deliveries?status=failed', { key })).body.data.deliveries.length, 0)
  const before = svc.snapshot()
  for (const q of ['limit=0', 'limit=201', 'status=lost', 'since=yesterday', 'cursor=%%%', 'cursor=bm9wZQ', 'colour=red']) {
    const r = await svc.request('GET', `/openrtb/v2/webhooks/deliveries?${q}`, { key })
    t.match(r, { status: 400, body: { error_code: q.startsWith('since=') ? 'invalid_date' : 'invalid_parameter' } }, q)
  }
  t.equal((await svc.request('GET', '/openrtb/v2/webhooks/deliveries')).status, 401)
  t.same(svc.snapshot(), before, 'nothing written')
  svc.clock.advance(7 * 86_400_000 + 60_000)
  t.equal((await svc.request('GET', '/openrtb/v2/webhooks/deliveries', { key })).body.data.deliveries.length, 0, 'older than 7 days is not shown')
  t.equal(svc.service.deliveries.sweep(svc.clock.now()), 6, 'and is swept')
})

t.test('the guard runs again at delivery time on every resolved address: names resolving to private addresses are refused', async (t) => {
  const receiver = await startReceiver(t, true)
  const port = new URL(receiver.url).port
  const dns = await startDnsServer(t, {
    'hooks.rebinding.test': ['10.1.2.3'],
    'metadata.evil.test': ['169.254.169.254'],
    'loopback6.evil.test': ['::1'],
    'mixed.evil.test': ['93.184.215.14', '127.0.0.1']
  })
  // No escape hatch here: the guard is what production runs.
  const svc = await startTestService(t, { DNS_SERVERS: dns.address })
  const { key } = await svc.onboard('guarded_hooks')
  const ids: Record<string, string> = {}
  for (const name of dns.records.keys()) {
    const r = await svc.request('POST', '/openrtb/v2/webhooks', { key, body: { url: `https://${name}:${port}/hook`, events: ['creative.moderation.completed'] } })
    t.equal(r.status, 201, `${name} looks public, so the subscription is accepted`)
    ids[name] = r.body.data.webhook.webhook_id
  }
  await svc.request('POST', '/openrtb/v2/creatives', { key, body: { name: 'guarded', content_type: 'image/png', creative_url: 'https://assets.invalid/x.png' } })
  await svc.service.moderator.idle()
  await flush(svc)
  const refusal: Record<string, string> = {
    'hooks.rebinding.test': '10.1.2.3',
    'metadata.evil.test': '169.254.169.254',
    'loopback6.evil.test': '::1',
    'mixed.evil.test': '127.0.0.1'
  }
  for (const [name, address] of Object.entries(refusal)) {
    const d = (await svc.request('GET', `/openrtb/v2/webhooks/deliveries?webhook_id=${ids[name]}`, { key })).body.data.deliveries[0]
    t.match(d, { status: 'retrying', response_status: null, error: `${name} resolves to ${address}, which is not a public address` }, `${name}: refused at connect time`)
  }
  // Rebinding: the name now answers loopback, where a receiver listens; the retry resolves again and is refused again.
  dns.records.set('hooks.rebinding.test', ['127.0.0.1'])
  const asked = dns.asked.get('hooks.rebinding.test') ?? 0
  svc.clock.advance(60_000)
  await svc.service.sender.idle()
  t.ok((dns.asked.get('hooks.rebinding.test') ?? 0) > asked, 'the retry resolved the name again')
  const rebound = (await svc.request('GET', `/openrtb/v2/webhooks/deliveries?webhook_id=${ids['hooks.rebinding.test']}`, { key })).body.data.deliveries[0]
  t.match(rebound, { attempts: 2, error: 'hooks.rebinding.test resolves to 127.0.0.1, which is not a public address' })
  t.equal(receiver.received.length, 0, 'nothing reached the loopback receiver')
})
