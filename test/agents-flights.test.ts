import { createHmac } from 'node:crypto'
import { GetMediaBuyDeliveryResponseSchema } from '@adcp/client'
import t from 'tap'
import { iso } from '../src/clock.js'
import { tool, market, gymProduct, approveSynced, DAY, MONDAY_9AM_AUSTIN, HOUR, playSpot } from './helpers/agents.js'
import { eventually } from './helpers/eventually.js'
import { deviceBody, registerDevices, registerPartner, sendAudience } from './helpers/fleet.js'
import { startReceiver } from './helpers/receiver.js'
import { startTestService } from './helpers/service.js'

// AI buying agents over MCP (test/helpers/agents.ts): a media buy's flight in time: reports at its cadence, guaranteed
// dayparts booked hour by hour, and its start and end instants on screens of any local date. Each test's clock starts
// at the hour it plays.

t.test('reporting webhooks: a media buy\'s delivery sent at its cadence, signed with the buyer\'s credentials, until a final report', async (t) => {
  const start = MONDAY_9AM_AUSTIN
  const svc = await startTestService(t, { PICKUP_SECONDS: '5', ALLOW_PRIVATE_CALLBACK_URLS: 'true' }, { at: start })
  // The flight ends half an hour into the third hour: two hourly reports, then the final one at its end.
  const end = start + 2.5 * HOUR
  const { embedOf, screens } = await market(svc)
  const rx = await startReceiver(t, true)
  const { key } = await svc.onboard('reporting_buyer')
  const credentials = 'c'.repeat(16) + 'r'.repeat(16) + '-secret'
  const preferred = await gymProduct(svc, key, 'preferred')
  const hook = { url: `${rx.url}/reports`, token: 'tok-1', authentication: { schemes: ['HMAC-SHA256'], credentials }, reporting_frequency: 'hourly' }
  const request = (reporting: Record<string, unknown>) => ({ buyer_ref: 'reported', start_time: 'asap', end_time: iso(end), reporting_webhook: reporting, packages: [{ product_id: preferred, pricing_option_id: 'cpm_fixed', budget: 100, pacing: 'asap', creatives: [{ creative_id: 'reported-ad', name: 'Reported ad', assets: { primary: { url: 'https://assets.invalid/reported.png' } } }] }] })

  const before = svc.snapshot()
  t.match(await tool(svc, key, 'create_media_buy', request({ ...hook, url: `http://127.0.0.1:${new URL(rx.url).port}/reports` })), { error: true, data: { errors: [{ code: 'invalid_parameter', field: 'reporting_webhook.url', message: /https/ }] } }, 'https only')
  t.match(await tool(svc, key, 'create_media_buy', request({ ...hook, authentication: { schemes: ['HMAC-SHA256'], credentials: 'short' } })), { error: true, data: { errors: [{ field: 'reporting_webhook.authentication.credentials' }] } }, 'credentials of at least 32 characters')
  t.match(await tool(svc, key, 'create_media_buy', request({ ...hook, reporting_frequency: 'weekly' })), { error: true, data: { errors: [{ field: 'reporting_webhook.reporting_frequency' }] } })
  t.same({ ...svc.snapshot(), outbox: 0, audit: 0 }, { ...before, outbox: 0, audit: 0 }, 'refusals write nothing')

  const made = await tool(svc, key, 'create_media_buy', request(hook))
  t.equal(made.error, false, JSON.stringify(made.data))
  t.match(await tool(svc, key, 'update_media_buy', { media_buy_id: made.data.media_buy_id, reporting_webhook: { ...hook, url: 'ftp://reports.example/in' } }), { error: true, data: { errors: [{ code: 'invalid_parameter', field: 'reporting_webhook.url' }] } }, 'update_media_buy checks a new webhook the same way')
  await approveSynced(svc, key)
  svc.clock.advance(10_000)
  const embed = embedOf(screens['gym-1']!)
  for (let i = 0; i < 3; i++) t.equal((await playSpot(svc, embed)).tier, 'preferred', `spot ${i + 1} plays the buy`)

  /** The reports received once the jobs ran at a time: all `count` of them, the sender waited for. */
  const reportsAt = async (ms: number, count: number) => {
    svc.clock.set(ms)
    await svc.service.runJobs()
    await svc.service.sender.idle()
    await eventually(t, `${count} report(s) received by ${iso(ms)}`, () => rx.received.length, { until: (n) => n >= count })
    return rx.received.map((r) => JSON.parse(r.body))
  }
  t.equal((await reportsAt(start + HOUR - 1000, 0)).length, 0, 'nothing before the hour')
  const [first] = await reportsAt(start + HOUR + 1000, 1)
  t.ok(GetMediaBuyDeliveryResponseSchema.safeParse(first).success, 'a report is AdCP\'s get_media_buy_delivery answer')
  t.match(first, { notification_type: 'scheduled', sequence_number: 1, next_expected_at: iso(start + 2 * HOUR), token: 'tok-1', reporting_period: { end: iso(start + HOUR) }, media_buy_deliveries: [{ media_buy_id: made.data.media_buy_id, by_package: [{ package_id: 'pkg-0' }] }] })
  t.ok(first.media_buy_deliveries[0].totals.impressions > 0, `with what it delivered (${first.media_buy_deliveries[0].totals.impressions as number} impressions, $${first.media_buy_deliveries[0].totals.spend as number})`)
  const got = rx.received[0]!
  const signature = Object.fromEntries(String(got.headers['x-service-signature']).split(',').map((p) => p.split('=') as [string, string]))
  t.equal(got.headers['x-service-event'], 'media_buy.delivery_report')
  t.equal(signature.v1, createHmac('sha256', credentials).update(`${got.headers['x-service-timestamp'] as string}.${got.body}`).digest('hex'), 'signed with the buyer\'s credentials over "<t>.<body>"')
  t.equal(signature.v0, createHmac('sha256', credentials).update(`${got.headers['x-service-timestamp'] as string}.${got.headers['x-service-delivery-id'] as string}.${got.body}`).digest('hex'), 'v0 binds the delivery id too')
  t.match((await reportsAt(start + 2 * HOUR + 1000, 2))[1], { notification_type: 'scheduled', sequence_number: 2, next_expected_at: iso(end) }, 'the next hour; the next is the flight\'s end')
  const last = (await reportsAt(end + 1000, 3))[2]
  t.match(last, { notification_type: 'final', sequence_number: 3, reporting_period: { end: iso(end) } }, 'a final report at the end')
  t.notOk('next_expected_at' in last)
  t.equal((await reportsAt(end + 2 * HOUR, 3)).length, 3, 'and nothing after it')
  t.equal((await svc.request('GET', '/healthz')).status, 200, 'still serving')
})

t.test('guaranteed packages with dayparts book each hour\'s spots: an hour without the room is refused, and the placement plays in its hours', async (t) => {
  // Monday 09:00 in Austin (15:00 UTC). Two-minute slots: each screen plays 30 spots an hour.
  const svc = await startTestService(t, { PICKUP_SECONDS: '5' }, { at: MONDAY_9AM_AUSTIN })
  const partner = await registerPartner(svc)
  await registerDevices(svc, partner, ['slow-1', 'slow-2'].map((id) => deviceBody(id, { floor_price_cpm: 10, slot_duration_seconds: 120 })))
  await sendAudience(svc, partner, ['slow-1', 'slow-2'].map((id) => ({ device_id: id, live_face_count: 8, attention_score: 0.6 })))
  const devices = (await svc.request('GET', '/v1/partner/devices', { key: partner.key })).body.data.devices as Array<{ device_id: string, embed_url: string }>
  const embed = new URL(devices.find((d) => d.device_id === 'slow-1')!.embed_url).pathname
  const { key } = await svc.onboard('evening_buyer')
  const guaranteed = await gymProduct(svc, key, 'guaranteed')
  const evenings = (start: number, end: number) => ({ daypart_targets: [{ days: ['monday'], start_hour: start, end_hour: end }] })
  // $12 CPM (1.2x the floor), 8 people a play, 2 screens, the 2 Mondays of the flight: $15.36 buys 40 spots a Monday on each.
  const buy = async (ref: string, budget: number, overlay?: Record<string, unknown>) => await tool(svc, key, 'create_media_buy', { buyer_ref: ref, start_time: 'asap', end_time: new Date(svc.clock.now() + 7 * DAY).toISOString(), packages: [{ product_id: guaranteed, pricing_option_id: 'cpm_fixed', budget, ...(overlay !== undefined ? { targeting_overlay: overlay } : {}), creatives: [{ creative_id: `${ref}-ad`, name: ref, assets: { primary: { url: `https://assets.invalid/${ref}.png` } } }] }] })

  const early = await buy('early-evening', 15.36, evenings(17, 19))
  t.equal(early.error, false, JSON.stringify(early.data))
  t.match(early.data.packages[0], { targeting_overlay: { daypart_targets: [{ days: ['monday'], start_hour: 17, end_hour: 19 }] }, ext: { oohbid: { spots_per_day: 40 } } }, '40 spots a Monday: 20 in each of its two hours')
  const before = svc.snapshot()
  t.match(await buy('late-evening', 4.608, evenings(18, 19)), { error: true, data: { errors: [{ code: 'capacity_unavailable', message: new RegExp(`10 free spots from 18:00 to 19:00 on ${iso(MONDAY_9AM_AUSTIN).slice(0, 10)}; 12 were asked`) }] } }, '12 more from 18:00 do not fit the 10 that hour has left')
  t.same({ ...svc.snapshot(), outbox: 0, audit: 0 }, { ...before, outbox: 0, audit: 0 }, 'and nothing is booked')
  t.equal((await buy('late-fits', 3.84, evenings(18, 19))).error, false, '10 fit')
  t.match(await buy('late-full', 1.6, evenings(18, 19)), { error: true, data: { errors: [{ code: 'capacity_unavailable', message: /0 free spots from 18:00/ }] } }, 'the hour is full now')
  t.equal((await buy('all-day', 153.6)).error, false, 'a whole-day line still fits the day around them')
  t.match(await tool(svc, key, 'update_media_buy', { media_buy_id: early.data.media_buy_id, packages: [{ package_id: 'pkg-0', targeting_overlay: evenings(19, 21) }] }), { error: true, data: { errors: [{ code: 'validation_failed', field: 'packages.0.targeting_overlay.daypart_targets' }] } }, 'a guaranteed package keeps the hours it booked')

  const [earlyAd] = await approveSynced(svc, key, ['early-evening-ad'])
  svc.clock.advance(10_000)
  t.not((await svc.request('POST', `${embed}/spots`, { body: {} })).body.data.creative?.creative_id, earlyAd, 'at 09:00 the evening line does not play')
  // 17:00 in Austin.
  svc.clock.set(MONDAY_9AM_AUSTIN + 8 * HOUR + 30_000)
  t.match((await svc.request('POST', `${embed}/spots`, { body: {} })).body.data, { tier: 'guaranteed', creative: { creative_id: earlyAd } }, 'at 17:00 it is behind its pace and plays')
  t.equal((await svc.request('GET', '/healthz')).status, 200, 'still serving')
})

t.test('a media buy plays from its start_time to its end_time on every screen, whatever the screen\'s local date', async (t) => {
  // 02:00 UTC on Tuesday is still Monday, 20:00, in Austin.
  const start = MONDAY_9AM_AUSTIN + 11 * HOUR
  const end = start + HOUR
  const svc = await startTestService(t, { PICKUP_SECONDS: '5' }, { at: start })
  const { embedOf, screens } = await market(svc)
  const { key } = await svc.onboard('late_buyer')
  const preferred = await gymProduct(svc, key, 'preferred')
  const made = await tool(svc, key, 'create_media_buy', { buyer_ref: 'late', start_time: 'asap', end_time: iso(end), packages: [{ product_id: preferred, pricing_option_id: 'cpm_fixed', budget: 50, pacing: 'asap', creatives: [{ creative_id: 'late-ad', name: 'Late ad', assets: { primary: { url: 'https://assets.invalid/late.png' } } }] }] })
  t.equal(made.error, false, JSON.stringify(made.data))
  const [creative] = await approveSynced(svc, key)
  t.match((await svc.request('GET', '/openrtb/v2/assignments', { key })).body.data.assignments, [{ start_date: iso(start).slice(0, 10), effective_at: String, ends_at: iso(end) }], 'the placement starts on UTC\'s Tuesday and ends at the buy\'s end_time')
  svc.clock.advance(10_000)
  const embed = embedOf(screens['gym-1']!)
  t.match((await svc.request('POST', `${embed}/spots`, { body: {} })).body.data, { tier: 'preferred', creative: { creative_id: creative } }, 'it plays in Austin at once, where it is still Monday')
  svc.clock.set(end + 1000)
  t.not((await svc.request('POST', `${embed}/spots`, { body: {} })).body.data.creative?.creative_id, creative, 'and stops at its end_time, before Austin\'s day ends')
})
