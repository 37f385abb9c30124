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
    [{ expires_at: 'tomorrow' }, 'invalid_date', 'expires_at'],
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

t.test('key management needs campaigns:write, and a key never grants or revokes beyond its own scopes', async (t) => {
  const svc = await startTestService(t)
  const { key: full } = await svc.onboard('keymgmt')
  const fullId = (await svc.request('GET', '/openrtb/v2/seat', { key: full })).body.data.key.key_id
  const mint = (key: string, scopes: string[]) => svc.request('POST', '/openrtb/v2/keys', { key, body: { scopes } })

  // In sandbox every route's scope check passes (spec), but a grant is still bounded by the calling key's scopes.
  const none = await mint(full, [])
  t.equal(none.status, 201, 'a key with no scopes')
  const narrow = await mint(full, ['stats:read'])
  t.equal(narrow.status, 201, 'a key with stats:read only')
  const before = svc.snapshot()
  const widen = await mint(none.body.data.key, ['bid:write'])
  t.match(widen, { status: 403, body: { error_code: 'missing_scope', required_scope: 'bid:write', granted_scopes: [] } }, 'sandbox: a scopeless key cannot mint a wider key')
  const lockout = await svc.request('DELETE', `/openrtb/v2/keys/${fullId}`, { key: none.body.data.key })
  t.match(lockout, { status: 403, body: { error_code: 'missing_scope', granted_scopes: [] } }, 'sandbox: a scopeless key cannot revoke the full-scope key')
  t.equal((await svc.request('DELETE', `/openrtb/v2/keys/${fullId}`, { key: narrow.body.data.key })).status, 403, 'nor can a stats:read key')
  t.same(svc.snapshot(), before, 'nothing written')
  t.equal((await svc.request('GET', '/openrtb/v2/seat', { key: full })).status, 200, 'the full-scope key still works')

  // Approved: the route itself needs campaigns:write.
  t.equal((await svc.admin('POST', '/admin/v1/seats/keymgmt/approve', { reason: 'test' })).status, 200)
  for (const [method, path] of [['POST', '/openrtb/v2/keys'], ['GET', '/openrtb/v2/keys'], ['DELETE', `/openrtb/v2/keys/${fullId}`]] as const) {
    const r = await svc.request(method, path, { key: none.body.data.key, ...(method === 'POST' ? { body: {} } : {}) })
    t.match(r, { status: 403, body: { error_code: 'missing_scope', required_scope: 'campaigns:write', granted_scopes: [] } }, `${method} ${path} with no scopes`)
  }
  t.equal((await mint(narrow.body.data.key, ['stats:read'])).status, 403, 'stats:read alone cannot manage keys')
  const manager = await mint(full, ['campaigns:write', 'stats:read'])
  t.equal(manager.status, 201)
  t.match(await mint(manager.body.data.key, ['bid:write']), { status: 403, body: { error_code: 'missing_scope', required_scope: 'bid:write' } }, 'campaigns:write grants only what the key holds')
  t.equal((await mint(manager.body.data.key, ['stats:read'])).status, 201, 'a narrower key')
  t.match(await svc.request('DELETE', `/openrtb/v2/keys/${fullId}`, { key: manager.body.data.key }), { status: 403, body: { error_code: 'missing_scope', required_scope: 'bid:write' } }, 'nor revokes a wider key')
  t.equal((await svc.request('DELETE', `/openrtb/v2/keys/${narrow.body.data.key_id}`, { key: manager.body.data.key })).status, 200, 'a key within its scopes is revoked')
  const doc = (await svc.request('GET', '/openrtb/v2/openapi.json')).body
  for (const method of ['get', 'post']) t.equal(doc.paths['/openrtb/v2/keys'][method]['x-scope'], 'campaigns:write', `OpenAPI documents the scope of ${method} /keys`)
  t.equal(doc.paths['/openrtb/v2/keys/{key_id}'].delete['x-scope'], 'campaigns:write')
})

t.test('a seat stored with its key list inside the seat record (before keys had rows of their own) keeps its keys after an upgrade', async (t) => {
  const { adoptSeatKeyLists } = await import('../src/auth/keys.js')
  const svc = await startTestService(t)
  const { key } = await svc.onboard('upgraded-keys')
  const minted = await svc.request('POST', '/openrtb/v2/keys', { key, body: { label: 'second' } })
  t.equal(minted.status, 201)
  const listed = async () => ((await svc.request('GET', '/openrtb/v2/keys', { key })).body.data.keys as Array<{ key_id: string }>).map((k) => k.key_id)
  const ids = await listed()
  t.equal(ids.length, 2)
  // The data as the version before kept it: the ids in the seat record, no rows of their own.
  const store = svc.service.store
  store.write(() => {
    for (const row of [...store.seatKeys.getKeys()]) store.seatKeys.removeSync(row)
    store.seats.putSync('upgraded-keys', { ...store.seats.get('upgraded-keys')!, key_ids: ids } as never)
    store.meta.removeSync('migrated:seat-keys')
  })
  t.same(await listed(), [], 'without rows, the old list is not read')
  adoptSeatKeyLists(store)
  t.same(await listed(), ids, 'both keys listed again, oldest first')
  const revoke = await svc.request('DELETE', `/openrtb/v2/keys/${ids[0]!}`, { key })
  t.equal(revoke.status, 200, 'and the first can be revoked: the seat has another live key')
  const before = svc.snapshot()
  adoptSeatKeyLists(store)
  t.same(svc.snapshot(), before, 'a second start moves nothing')
})
