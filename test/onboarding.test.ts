import t from 'tap'
import { freshIp, startTestService } from './helpers/service.js'

const DSP = ['bid:write', 'inventory:read', 'deals:read', 'stats:read', 'campaigns:write', 'reports:read', 'proof:read', 'mcp:tools']

t.test('no key: a legacy key is minted and shown once, the seat starts in sandbox', async (t) => {
  const svc = await startTestService(t)
  const { reply, key } = await svc.onboard('acme_media', { openrtb_version: '2.5', notification_url: 'https://acme.example/win', webhook_url: 'https://acme.example/hooks' })
  t.equal(reply.status, 201)
  const { registration, api_key: apiKey, sandbox } = reply.body.data
  t.match(registration, { id: /^[0-9a-f-]{36}$/, seat_id: 'acme_media', company_name: 'acme_media Media', status: 'sandbox', openrtb_version: '2.5', created_at: /^\d{4}-\d\d-\d\dT/ })
  t.match(apiKey, { reused_platform_key: false, key: /^oohb_lk_[0-9A-Za-z]{40}$/, scopes: DSP, rate_limit_rpm: 100 })
  t.equal(apiKey.prefix, key.slice(0, apiKey.prefix.length), 'prefix is the leading characters of the key')
  t.notOk('key_id' in apiKey, 'key_id comes only with a linked platform key')
  t.match(sandbox, { description: String, rate_limit: /100/, endpoints: { bid: /^POST .*\/openrtb\/v2\/bid$/, adslots: /^GET .*\/adslots$/, stats: /^GET .*\/stats$/ }, auth: /Bearer/ })
  const seat = await svc.request('GET', '/openrtb/v2/seat', { key })
  t.equal(seat.status, 200, 'the key works')
  t.equal(seat.body.data.seat.seat_id, 'acme_media')
  t.notMatch(seat.text, /acme\.example|buyer@/, 'contact, billing, notification and webhook fields are never read back')
  t.notMatch(seat.text, new RegExp(key), 'the key is never shown again')
  t.equal(svc.service.outbox.read('test', 10).filter((e) => e.type === 'seat.registered').length, 1, 'seat.registered committed with the seat')
})

t.test('a valid platform key is linked, gains the DSP scopes, and is never echoed', async (t) => {
  const svc = await startTestService(t)
  const minted = await svc.request('POST', '/v1/partner/agent/register', { body: { name: 'buying-agent', scopes: ['inventory:read'] }, headers: { 'x-forwarded-for': freshIp() } })
  t.equal(minted.status, 201)
  const platformKey = minted.body.data.api_key.key
  t.match(platformKey, /^oohb_pk_/)
  const before = await svc.request('GET', '/openrtb/v2/seat', { key: platformKey })
  t.equal(before.status, 401, 'a platform key without a seat has no seat context')
  t.equal(before.body.error_code, 'authentication_required')
  const { reply } = await svc.onboard('agentseat', {}, platformKey)
  t.equal(reply.status, 201)
  const apiKey = reply.body.data.api_key
  t.match(apiKey, { key_id: minted.body.data.api_key.key_id, reused_platform_key: true, prefix: platformKey.slice(0, 12) })
  t.same([...apiKey.scopes].sort(), [...DSP].sort())
  t.notOk('key' in apiKey, 'the raw key is not returned')
  t.notMatch(reply.text, new RegExp(platformKey))
  const after = await svc.request('GET', '/openrtb/v2/seat', { key: platformKey })
  t.equal(after.body.data.seat.seat_id, 'agentseat', 'the same key now carries the seat')
  const again = await svc.onboard('otherseat', {}, platformKey)
  t.equal(again.reply.status, 409, 'a key links to one seat only')
  t.equal(again.reply.body.error_code, 'already_exists')
})

t.test('an invalid supplied key is refused and nothing is minted', async (t) => {
  const svc = await startTestService(t)
  const before = svc.snapshot()
  for (const headers of [{ authorization: 'Bearer oohb_pk_notakey' }, { 'x-api-key': 'oohb_lk_bogus' }, { authorization: 'Bearer ' }] as Array<Record<string, string>>) {
    const r = await svc.request('POST', '/openrtb/v2/onboard', { body: { company_name: 'Nope', seat_id: 'nope', contact_email: 'n@nope.example' }, headers: { ...headers, 'x-forwarded-for': freshIp() } })
    t.equal(r.status, 401)
    t.equal(r.body.error_code, 'authentication_required')
  }
  t.same(svc.snapshot(), before, 'no seat, no key, no event')
  t.equal((await svc.onboard('nope')).reply.status, 201, 'the seat_id is still free and the service still serving')
})

t.test('seat_id is unique forever, case-insensitively, and the 409 names the existing status', async (t) => {
  const svc = await startTestService(t)
  await svc.onboard('Uniq')
  const before = svc.snapshot()
  const dup = await svc.onboard('uniq')
  t.equal(dup.reply.status, 409)
  t.match(dup.reply.body, { error_code: 'seat_id_already_registered', error: /sandbox/, status: 'sandbox', param: 'seat_id' })
  await svc.admin('POST', '/admin/v1/seats/uniq/revoke', { reason: 'fraud' })
  const afterRevoke = await svc.onboard('UNIQ')
  t.equal(afterRevoke.reply.status, 409, 'a revoked seat keeps its id')
  t.match(afterRevoke.reply.body, { error: /revoked/, status: 'revoked' })
  t.equal(svc.snapshot().seats, before.seats)
})

t.test('every field rule gives its spec error code, status and param; nothing is written', async (t) => {
  const svc = await startTestService(t)
  const good = { company_name: 'Good Co', seat_id: 'good_co', contact_email: 'ops@good.example' }
  const cases: Array<[string, Record<string, unknown>, string, string]> = [
    ['missing company_name', { seat_id: 'a1', contact_email: 'a@b.example' }, 'missing_required_field', 'company_name'],
    ['missing seat_id', { company_name: 'Co', contact_email: 'a@b.example' }, 'missing_required_field', 'seat_id'],
    ['missing contact_email', { company_name: 'Co', seat_id: 'a1' }, 'missing_required_field', 'contact_email'],
    ['company_name too short', { ...good, company_name: 'X' }, 'invalid_parameter', 'company_name'],
    ['company_name too long', { ...good, company_name: 'x'.repeat(201) }, 'invalid_parameter', 'company_name'],
    ['seat_id with a space', { ...good, seat_id: 'bad id' }, 'invalid_seat_id', 'seat_id'],
    ['seat_id too short', { ...good, seat_id: 'a' }, 'invalid_seat_id', 'seat_id'],
    ['seat_id too long', { ...good, seat_id: 'a'.repeat(65) }, 'invalid_seat_id', 'seat_id'],
    ['seat_id not a string', { ...good, seat_id: 42 }, 'invalid_seat_id', 'seat_id'],
    ['contact_email malformed', { ...good, contact_email: 'not-an-email' }, 'invalid_email', 'contact_email'],
    ['billing_email malformed', { ...good, billing_email: 'billing@' }, 'invalid_email', 'billing_email'],
    ['openrtb_version unknown', { ...good, openrtb_version: '3.0' }, 'invalid_parameter', 'openrtb_version'],
    ['notification_url not https', { ...good, notification_url: 'http://good.example/n' }, 'invalid_webhook_url', 'notification_url'],
    ['webhook_url not a URL', { ...good, webhook_url: 'https://' }, 'invalid_webhook_url', 'webhook_url'],
    ['webhook_url on localhost', { ...good, webhook_url: 'https://localhost/hook' }, 'invalid_webhook_url', 'webhook_url'],
    ['webhook_url on a private address', { ...good, webhook_url: 'https://10.1.2.3/hook' }, 'invalid_webhook_url', 'webhook_url'],
    ['webhook_url on loopback in decimal', { ...good, webhook_url: 'https://2130706433/hook' }, 'invalid_webhook_url', 'webhook_url'],
    ['notification_url on IPv6 loopback', { ...good, notification_url: 'https://[::1]/win' }, 'invalid_webhook_url', 'notification_url'],
    ['notification_url on IPv4-mapped private', { ...good, notification_url: 'https://[::ffff:192.168.1.1]/win' }, 'invalid_webhook_url', 'notification_url'],
    ['unknown field', { ...good, colour: 'blue' }, 'invalid_parameter', 'colour']
  ]
  const before = svc.snapshot()
  for (const [name, body, code, param] of cases) {
    const r = await svc.request('POST', '/openrtb/v2/onboard', { body, headers: { 'x-forwarded-for': freshIp() } })
    t.equal(r.status, 400, `${name}: 400`)
    t.match(r.body, { success: false, error_code: code, param, error: String, request_id: /^req_/ }, name)
  }
  const notObject = await svc.request('POST', '/openrtb/v2/onboard', { raw: '[1,2]', headers: { 'x-forwarded-for': freshIp() } })
  t.equal(notObject.status, 400, 'a JSON array is not a request')
  t.same(svc.snapshot(), before, 'nothing written')
  t.equal((await svc.onboard('still_ok')).reply.status, 201, 'still serving')
})

t.test('both seat_id rules of the spec: every id valid under the stricter rule is accepted, and so are the onboarding rule\'s', async (t) => {
  const svc = await startTestService(t)
  for (const id of ['abc', 'a_b_c', 'x'.repeat(40), 'AB', 'with-dash', 'x'.repeat(64)]) {
    t.equal((await svc.onboard(id)).reply.status, 201, id)
  }
})

t.test('onboarding is limited to 5 per hour per client address, failures included, with retry_after', async (t) => {
  const svc = await startTestService(t)
  const ip = freshIp()
  const send = (seat: string, body: Record<string, unknown> = {}) => svc.request('POST', '/openrtb/v2/onboard', { body: { company_name: 'Rate Co', seat_id: seat, contact_email: 'r@rate.example', ...body }, headers: { 'x-forwarded-for': ip } })
  t.equal((await send('r1')).status, 201)
  t.equal((await send('r1')).status, 409, 'a failure counts')
  t.equal((await send('r2', { contact_email: 'bad' })).status, 400, 'a failure counts')
  t.equal((await send('r3')).status, 201)
  const fifth = await send('r4')
  t.equal(fifth.status, 201)
  t.equal(fifth.headers.get('ratelimit-remaining'), '0')
  const limited = await send('r5')
  t.equal(limited.status, 429)
  t.match(limited.body, { error_code: 'rate_limited', retry_after_seconds: Number, retry_after: Number })
  t.equal(limited.body.retry_after, limited.body.retry_after_seconds)
  t.equal(limited.headers.get('retry-after'), String(limited.body.retry_after_seconds))
  t.ok(limited.body.retry_after_seconds > 3500 && limited.body.retry_after_seconds <= 3600)
  t.equal(svc.service.store.seats.get('r5'), undefined, 'nothing written')
  const other = await svc.request('POST', '/openrtb/v2/onboard', { body: { company_name: 'Rate Co', seat_id: 'r6', contact_email: 'r@rate.example' }, headers: { 'x-forwarded-for': freshIp() } })
  t.equal(other.status, 201, 'another address is not limited')
  svc.clock.advance(3600 * 1000)
  t.equal((await send('r5')).status, 201, 'the window resets after an hour')
})

t.test('X-Forwarded-For is believed only from a trusted proxy', async (t) => {
  const svc = await startTestService(t, { TRUST_PROXY: '' })
  for (let i = 0; i < 5; i++) await svc.onboard(`nt${i}`)
  const sixth = await svc.onboard('nt5')
  t.equal(sixth.reply.status, 429, 'every request counts against the socket address when no proxy is trusted')
})
