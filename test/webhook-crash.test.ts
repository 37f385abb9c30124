import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Stripe from 'stripe'
import t from 'tap'
import { eventually } from './helpers/eventually.js'
import { startProcess } from './helpers/process.js'
import { startReceiver } from './helpers/receiver.js'

// kill -9 of the service while deliveries are in flight: after a restart on the same data every event of every
// acknowledged request is delivered, each event under one delivery id, and only attempts the kill cut short are
// sent again (with the same id, so the receiver can deduplicate).

/** More than can be created before 20 deliveries arrive, however fast the hot threads take them: the kill comes mid-stream. */
const CREATIVES = 2000

t.test('kill -9 mid-delivery loses no event, and repeats only what was in flight', async (t) => {
  const receiver = await startReceiver(t, true, { delay: () => 25 })
  const dataDir = mkdtempSync(join(tmpdir(), 'oohbid-hook-crash-'))
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }))
  const env = { ALLOW_PRIVATE_CALLBACK_URLS: '1' }
  const first = await startProcess(dataDir, env)
  const firstExit = new Promise((resolve) => first.child.once('exit', resolve))
  const call = (base: string, method: string, path: string, key: string | undefined, body?: unknown) => fetch(base + path, {
    method,
    headers: { 'content-type': 'application/json', 'x-forwarded-for': '198.51.100.77', ...(key !== undefined ? { authorization: `Bearer ${key}` } : {}) },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {})
  }).then(async (r) => ({ status: r.status, body: await r.json() as any }))
  const onboard = await call(first.url, 'POST', '/openrtb/v2/onboard', undefined, { company_name: 'Crash Hooks', seat_id: 'crash_hooks', contact_email: 'c@crash.example' })
  const key = onboard.body.data.api_key.key as string
  const hook = await call(first.url, 'POST', '/openrtb/v2/webhooks', key, { url: `${receiver.url}/crash`, events: ['creative.moderation.completed'] })
  t.equal(hook.status, 201)
  const secret = hook.body.data.secret as string

  const acknowledged: string[] = []
  let next = 0
  let killed = false
  const worker = async () => {
    while (!killed && next < CREATIVES) {
      const i = next++
      try {
        const r = await call(first.url, 'POST', '/openrtb/v2/creatives', key, { name: `crash ${i}`, content_type: 'image/png', creative_url: `https://assets.invalid/${i}.png` })
        if (r.status === 201) acknowledged.push(r.body.data.creative_id)
      } catch {}
      if (receiver.received.length >= 20 && !killed) {
        killed = true
        first.child.kill('SIGKILL')
      }
    }
  }
  await Promise.all(Array.from({ length: 6 }, worker))
  if (!killed) first.child.kill('SIGKILL')
  await firstExit
  const beforeRestart = receiver.received.length
  t.ok(beforeRestart >= 20 && acknowledged.length < CREATIVES, `killed after ${beforeRestart} deliveries, with ${acknowledged.length} creatives acknowledged`)

  const second = await startProcess(dataDir, env)
  t.teardown(() => { second.child.kill('SIGKILL') })
  const delivered = () => new Set(receiver.received.map((r) => JSON.parse(r.body).data.object.creative_id as string))
  const undelivered = await eventually(t, 'every acknowledged creative\'s moderation result delivered', () => acknowledged.filter((id) => !delivered().has(id)), { within: 30_000, every: 100, until: (ids) => ids.length === 0 })
  t.same(undelivered, [], 'every acknowledged creative\'s moderation result was delivered')

  const idsByEvent = new Map<string, Set<string>>()
  const copies = new Map<string, number>()
  for (const r of receiver.received) {
    const body = Stripe.webhooks.constructEvent(r.body, String(r.headers['x-service-signature']), secret, 300) as unknown as { data: { event_id: string } }
    const id = String(r.headers['x-service-delivery-id'])
    idsByEvent.set(body.data.event_id, (idsByEvent.get(body.data.event_id) ?? new Set()).add(id))
    copies.set(id, (copies.get(id) ?? 0) + 1)
  }
  t.ok([...idsByEvent.values()].every((ids) => ids.size === 1), 'each event was queued once: one delivery id, across the restart')
  const repeated = [...copies].filter(([, n]) => n > 1)
  t.ok(repeated.every(([, n]) => n === 2), 'a repeat is at most one extra copy')
  t.ok(repeated.length <= 16, `only attempts in flight at the kill were repeated (${repeated.length}, at most the 16 connections per receiver)`)

  const logged = async () => (await call(second.url, 'GET', '/openrtb/v2/webhooks/deliveries?limit=200', key)).body.data.deliveries as Array<{ status: string }>
  // The last answers may still be on their way to the log.
  const log = await eventually(t, 'every delivery logged succeeded', logged, { every: 100, until: (l) => l.every((d) => d.status === 'succeeded') })
  t.equal(log.length, idsByEvent.size, 'the log has one entry per event')
  t.ok(log.every((d) => d.status === 'succeeded'), 'all succeeded')
  const stop = new Promise((r) => second.child.once('exit', r))
  second.child.kill('SIGTERM')
  t.equal(await stop, 0)
})
