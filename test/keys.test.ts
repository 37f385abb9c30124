import t from 'tap'
import { startTestService } from './helpers/service.js'

t.test('rotation: mint a new key, switch, revoke the old one', async (t) => {
  const svc = await startTestService(t)
  const { key: oldKey } = await svc.onboard('rotator')
  const minted = await svc.request('POST', '/openrtb/v2/keys', { key: oldKey, body: { label: 'ci-2026' } })
  t.equal(minted.status, 201)
  t.match(minted.body.data, { key_id: /^[0-9a-f-]{36}$/, key: /^oohb_pk_/, prefix: /^oohb_pk_/, label: 'ci-2026', created_at: String })
  const newKey = minted.body.data.key
  t.equal((await svc.request('GET', '/openrtb/v2/seat', { key: newKey })).status, 200)
  const list = await svc.request('GET', '/openrtb/v2/keys', { key: newKey })
  t.equal(list.body.data.keys.length, 2)
  t.notMatch(list.text, new RegExp(`${oldKey}|${newKey}`), 'the list shows prefixes, never keys')
  const oldId = list.body.data.keys.find((k: { kind: string }) => k.kind === 'legacy').key_id
  const revoked = await svc.request('DELETE', `/openrtb/v2/keys/${oldId}`, { key: newKey })
  t.equal(revoked.status, 200)
  t.match(revoked.body.data, { key_id: oldId, revoked_at: String })
  t.equal((await svc.request('GET', '/openrtb/v2/seat', { key: oldKey })).status, 401, 'the old key stops at once')
  const last = await svc.request('DELETE', `/openrtb/v2/keys/${minted.body.data.key_id}`, { key: newKey })
  t.equal(last.status, 409, 'the last live key cannot be revoked')
  t.equal(last.body.error_code, 'invalid_transition')
  t.equal((await svc.request('GET', '/openrtb/v2/seat', { key: newKey })).status, 200)
})

t.test('another seat\'s key id is 404 not_found; bad input writes nothing', async (t) => {
  const svc = await startTestService(t)
  const a = await svc.onboard('seat_a')
  const b = await svc.onboard('seat_b')
  const bKeyId = (await svc.request('GET', '/openrtb/v2/seat', { key: b.key })).body.data.key.key_id
  const before = svc.snapshot()
  const foreign = await svc.request('DELETE', `/openrtb/v2/keys/${bKeyId}`, { key: a.key })
  t.equal(foreign.status, 404)
  t.match(foreign.body, { error_code: 'not_found', param: 'key_id' })
  t.equal((await svc.request('DELETE', '/openrtb/v2/keys/00000000-0000-0000-0000-000000000000', { key: a.key })).status, 404)
  const cases: Array<[unknown, string, string]> = [
    [{ scopes: ['root'] }, 'invalid_parameter', 'scopes.0'],
    [{ label: '' }, 'invalid_parameter', 'label'],
    [{ expires_at: 'tomorrow' }, 'invalid_parameter', 'expires_at'],
    [{ expires_at: new Date(svc.clock.now() - 1000).toISOString() }, 'invalid_date', 'expires_at']
  ]
  for (const [body, code, param] of cases) {
    const r = await svc.request('POST', '/openrtb/v2/keys', { key: a.key, body })
    t.equal(r.status, 400, JSON.stringify(body))
    t.match(r.body, { error_code: code, param })
  }
  t.same(svc.snapshot(), before, 'nothing written')
  t.equal((await svc.request('GET', '/openrtb/v2/seat', { key: b.key })).status, 200, 'seat b keeps its key')
})

t.test('a key with expires_at answers 401 once it has passed', async (t) => {
  const svc = await startTestService(t)
  const { key } = await svc.onboard('expiring')
  const expires = new Date(svc.clock.now() + 3600_000).toISOString()
  const minted = await svc.request('POST', '/openrtb/v2/keys', { key, body: { expires_at: expires } })
  t.equal(minted.body.data.expires_at, expires)
  const temp = minted.body.data.key
  t.equal((await svc.request('GET', '/openrtb/v2/seat', { key: temp })).status, 200)
  svc.clock.advance(3600_000 + 1001)
  t.equal((await svc.request('GET', '/openrtb/v2/seat', { key: temp })).status, 401)
  t.equal((await svc.request('GET', '/openrtb/v2/seat', { key })).status, 200, 'keys without expiry live on')
})
