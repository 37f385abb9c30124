import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { Authenticator } from '../src/auth/authenticate.js'
import { ApiError } from '../src/errors.js'
import { ok, route } from '../src/http/route.js'
import { freshIp, startTestService } from './helpers/service.js'

t.test('Bearer and x-api-key both authenticate; anything else is 401 authentication_required', async (t) => {
  const svc = await startTestService(t)
  const { key } = await svc.onboard('authy')
  t.equal((await svc.request('GET', '/openrtb/v2/seat', { headers: { authorization: `Bearer ${key}` } })).status, 200)
  t.equal((await svc.request('GET', '/openrtb/v2/seat', { headers: { authorization: `bearer ${key}` } })).status, 200, 'the scheme is case-insensitive')
  t.equal((await svc.request('GET', '/openrtb/v2/seat', { headers: { 'x-api-key': key } })).status, 200)
  for (const headers of [{}, { authorization: `Basic ${key}` }, { authorization: 'Bearer' }, { 'x-api-key': '' }, { authorization: `Bearer ${key}x` }, { 'x-api-key': key.toUpperCase() }] as Array<Record<string, string>>) {
    const r = await svc.request('GET', '/openrtb/v2/seat', { headers })
    t.equal(r.status, 401, JSON.stringify(headers).slice(0, 40))
    t.match(r.body, { success: false, error_code: 'authentication_required', request_id: /^req_/ })
  }
})

t.test('failed authentication is limited per client address (60 per minute)', async (t) => {
  const svc = await startTestService(t)
  const ip = freshIp()
  let last
  for (let i = 0; i < 61; i++) last = await svc.request('GET', '/openrtb/v2/seat', { headers: { authorization: `Bearer guess-${i}`, 'x-forwarded-for': ip } })
  t.equal(last!.status, 429)
  t.equal(last!.body.error_code, 'rate_limited')
  const { key } = await svc.onboard('legit')
  t.equal((await svc.request('GET', '/openrtb/v2/seat', { key, headers: { 'x-forwarded-for': ip } })).status, 200, 'a valid key from the same address is not held back')
})

t.test('scopes are checked per route; sandbox keys pass every check', async (t) => {
  const svc = await startTestService(t)
  const auth = new Authenticator(svc.service.store, svc.clock, 'admin')
  const scoped = route({ method: 'get', path: '/openrtb/v2/stats', summary: 's', tag: 't', envelope: 'flat', auth: 'seat', scope: 'stats:read', rateGroup: 'bidding', handler: () => ok({}) })
  const { key } = await svc.onboard('scoped')
  const keyId = (await svc.request('GET', '/openrtb/v2/seat', { key })).body.data.key.key_id
  await svc.admin('PATCH', `/admin/v1/keys/${keyId}`, { scopes: ['inventory:read', 'campaigns:write'] })
  t.doesNotThrow(() => auth.checkAccess(scoped, auth.resolve(key)), 'sandbox: a narrowed key still passes')
  await svc.admin('POST', '/admin/v1/seats/scoped/approve')
  svc.clock.advance(1001) // this second Authenticator sees another instance's change within a second
  const err = t.throws(() => auth.checkAccess(scoped, auth.resolve(key))) as ApiError
  t.match(err, { code: 'missing_scope', status: 403, extras: { required_scope: 'stats:read', granted_scopes: ['inventory:read', 'campaigns:write'] } })
  const wide = await svc.request('POST', '/openrtb/v2/keys', { key, body: { scopes: ['inventory:read', 'bid:write'] } })
  t.equal(wide.status, 403, 'over HTTP: a key cannot mint scopes it lacks')
  t.match(wide.body, { error_code: 'missing_scope', required_scope: 'bid:write', granted_scopes: ['inventory:read', 'campaigns:write'] })
})

t.test('suspended and revoked seats are refused with 403; a partner-only key has no seat context', async (t) => {
  const svc = await startTestService(t)
  const { key } = await svc.onboard('status_seat')
  await svc.admin('POST', '/admin/v1/seats/status_seat/suspend', { reason: 'unpaid' })
  const suspended = await svc.request('GET', '/openrtb/v2/seat', { key })
  t.equal(suspended.status, 403)
  t.equal(suspended.body.error_code, 'seat_suspended')
  await svc.admin('POST', '/admin/v1/seats/status_seat/reinstate')
  t.equal((await svc.request('GET', '/openrtb/v2/seat', { key })).status, 200, 'reinstated')
  await svc.admin('POST', '/admin/v1/seats/status_seat/revoke')
  const revoked = await svc.request('GET', '/openrtb/v2/seat', { key })
  t.equal(revoked.status, 403)
  t.equal(revoked.body.error_code, 'seat_revoked')
  const partner = await svc.request('POST', '/v1/partner/register', { body: { name: 'Screens Inc', slug: 'screens-inc', contact_email: 'ops@screens.example', partner_type: 'screen_operator' }, headers: { 'x-forwarded-for': freshIp() } })
  const noSeat = await svc.request('GET', '/openrtb/v2/seat', { key: partner.body.data.api_key.key })
  t.equal(noSeat.status, 401)
  t.match(noSeat.body.error, /no seat/)
})

t.test('keys are stored only as SHA-256 digests', async (t) => {
  const svc = await startTestService(t)
  const { key } = await svc.onboard('digest')
  const partner = await svc.request('POST', '/v1/partner/register', { body: { name: 'Digest Screens', slug: 'digest', contact_email: 'ops@digest.example', partner_type: 'network' }, headers: { 'x-forwarded-for': freshIp() } })
  await svc.service.store.root.flushed
  const bytes = readFileSync(join(svc.dataDir, 'oohbid.lmdb'))
  t.ok(bytes.length > 0, 'read the database file')
  for (const secret of [key, partner.body.data.api_key.key]) {
    t.equal(bytes.indexOf(secret), -1, 'the key is not on disk')
    t.equal(bytes.indexOf(secret.slice(8)), -1, 'nor its random part')
  }
})

t.test('partner routes need a partner key: a buyer key is 403 not_authorized', async (t) => {
  const svc = await startTestService(t)
  const auth = new Authenticator(svc.service.store, svc.clock, 'admin')
  const partnerRoute = route({ method: 'get', path: '/v1/partner/devices', summary: 'd', tag: 't', envelope: 'nested', auth: 'partner', rateGroup: 'partner', handler: () => ok({}) })
  const { key } = await svc.onboard('buyer_only')
  const err = t.throws(() => auth.checkAccess(partnerRoute, auth.resolve(key))) as ApiError
  t.match(err, { code: 'not_authorized', status: 403 })
  const partner = await svc.request('POST', '/v1/partner/register', { body: { name: 'Screens Co', slug: 'screens-co', contact_email: 'ops@screens.example', partner_type: 'screen_operator' }, headers: { 'x-forwarded-for': freshIp() } })
  t.doesNotThrow(() => auth.checkAccess(partnerRoute, auth.resolve(partner.body.data.api_key.key)))
})

t.test('a wrong operator token counts against the address like a wrong key', async (t) => {
  const svc = await startTestService(t)
  const ip = freshIp()
  let last
  for (let i = 0; i < 61; i++) last = await svc.request('GET', '/admin/v1/seats', { headers: { authorization: `Bearer guess-${i}`, 'x-forwarded-for': ip } })
  t.equal(last!.status, 429)
})
