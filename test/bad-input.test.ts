import t from 'tap'
import { isMutating } from '../src/http/route.js'
import { freshIp, startTestService } from './helpers/service.js'
import { codeOf, fill, fixtures, validBodies } from './helpers/sweep.js'

// Every route of the table, driven with bad input: the right code and status in the route's envelope, nothing
// written, and the service still serving afterwards.

t.test('every route with a body refuses bad bodies with its envelope and writes nothing', async (t) => {
  const svc = await startTestService(t)
  const f = await fixtures(svc)
  const creds: Record<string, string | undefined> = { seat: f.seatKey, key: f.seatKey, partner: f.partnerKey, admin: svc.adminToken, none: undefined, 'optional-key': undefined }
  const routes = svc.service.routes.filter((r) => r.body !== undefined)
  t.ok(routes.length >= 10, `${routes.length} routes take a body`)
  for (const route of routes) {
    const path = fill(route.path, f)
    const name = `${route.method.toUpperCase()} ${route.path}`
    const send = (raw: string, contentType = 'application/json', extra: Record<string, string> = {}) => svc.request(route.method.toUpperCase(), path, {
      raw,
      headers: { 'content-type': contentType, 'x-forwarded-for': freshIp(), ...extra },
      ...(creds[route.auth] !== undefined ? { key: creds[route.auth]! } : {})
    })
    const before = svc.snapshot()
    const cases: Array<[string, () => ReturnType<typeof send>, number, string[]]> = [
      ['malformed JSON', () => send('{"a":'), 400, ['invalid_json', 'invalid_bid_response', 'invalid_bid_request']],
      ['not JSON', () => send('a=1', 'application/x-www-form-urlencoded'), 415, ['unsupported_media_type']],
      ['an array', () => send('[]'), 400, ['invalid_parameter', 'invalid_bid_response', 'invalid_bid_request']],
      ['an unknown field', () => send('{"__bogus":1}'), 400, ['invalid_parameter', 'missing_required_field', 'missing_name', 'missing_content_type', 'invalid_bid_response', 'invalid_bid_request']],
      ['a wrong type', () => send('{"name":7,"company_name":7,"scopes":"all","limits":[],"reason":7,"label":7}'), 400, ['invalid_parameter', 'missing_required_field', 'missing_content_type', 'invalid_bid_response', 'invalid_bid_request']],
      ['an oversized Idempotency-Key', () => send('{"id":"x"}', 'application/json', { 'idempotency-key': 'k'.repeat(300) }), 400, ['invalid_idempotency_key']]
    ]
    for (const [what, go, status, codes] of cases) {
      const r = await go()
      t.equal(r.status, status, `${name}, ${what}: ${status}`)
      const code = codeOf(route.envelope, r.body) ?? ''
      // A route may name the missing field in its own code (missing_name, missing_creative_id, ...).
      t.ok(codes.includes(code) || (codes.includes('missing_required_field') && code.startsWith('missing_')), `${name}, ${what}: ${code} in ${codes.join('|')}`)
      t.match(r.headers.get('x-request-id'), /^req_/)
    }
    t.same(svc.snapshot(), before, `${name}: nothing written`)
  }
  t.equal((await svc.request('GET', '/healthz')).status, 200, 'still serving')
})

t.test('every authenticated route refuses a missing credential with 401 in its envelope', async (t) => {
  const svc = await startTestService(t)
  const before = svc.snapshot()
  for (const route of svc.service.routes.filter((r) => r.auth !== 'none' && r.auth !== 'optional-key')) {
    const path = route.path.replace(/:(\w+)/g, 'x')
    const r = await svc.request(route.method.toUpperCase(), path, { headers: { 'x-forwarded-for': freshIp() }, ...(route.body ? { body: {} } : {}) })
    t.equal(r.status, 401, `${route.method.toUpperCase()} ${route.path}`)
    t.equal(codeOf(route.envelope, r.body), 'authentication_required')
    if (isMutating(route.method)) t.same(svc.snapshot(), before)
  }
})

t.test('every mutating route honours ?dry_run=true: the real checks run, nothing persists', async (t) => {
  const svc = await startTestService(t)
  const f = await fixtures(svc)
  const mint = await svc.request('POST', '/openrtb/v2/keys', { key: f.seatKey, body: { label: 'spare' } })
  const spareId = mint.body.data.key_id
  const valid = validBodies(f)
  const creds: Record<string, string | undefined> = { seat: f.seatKey, partner: f.partnerKey, admin: svc.adminToken }
  const mutating = svc.service.routes.filter((r) => isMutating(r.method))
  for (const route of mutating) {
    const name = `${route.method.toUpperCase()} ${route.path}`
    t.ok(name in valid, `${name} has a dry-run case here`)
    if (valid[name] === null) continue // reinstate needs a suspended seat; covered by its transition test
    const before = svc.snapshot()
    const path = fill(route.path, f, spareId)
    const r = await svc.request(route.method.toUpperCase(), `${path}?dry_run=true`, {
      headers: { 'x-forwarded-for': freshIp() },
      ...(valid[name] !== undefined ? { body: valid[name] } : {}),
      ...(creds[route.auth] !== undefined ? { key: creds[route.auth]! } : {})
    })
    t.equal(r.status, 200, `${name}: 200`)
    t.equal(r.body.dry_run, true, `${name}: dry_run`)
    t.type(r.body.warnings, Array)
    t.same(svc.snapshot(), before, `${name}: nothing persisted`)
  }
  t.equal((await svc.request('GET', '/openrtb/v2/seat', { key: f.seatKey })).body.data.seat.status, 'sandbox', 'the seat was not moved')
  const keys = await svc.request('GET', '/openrtb/v2/keys', { key: f.seatKey })
  t.ok(keys.body.data.keys.every((k: { revoked_at: string | null }) => k.revoked_at === null), 'no key was revoked')
  const before = svc.snapshot()
  const upload = await svc.request('PUT', `/uploads/${f.uploadToken}?dry_run=true`, { raw: 'other bytes', headers: { 'content-type': 'image/png' } })
  t.match(upload.body, { dry_run: true, data: { bytes: 11 } })
  t.same(svc.snapshot(), before, 'a dry-run upload stores nothing')
  t.equal((await svc.request('GET', `/openrtb/v2/creatives/${f.creativeId}`, { key: f.seatKey })).body.data.asset.bytes, 16, 'the earlier upload is untouched')
})
