import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import t from 'tap'
import { startTestService } from './helpers/service.js'

const run = promisify(execFile)

t.test('the operator API needs the operator token', async (t) => {
  const svc = await startTestService(t)
  const { key } = await svc.onboard('someone')
  for (const headers of [{}, { authorization: 'Bearer wrong' }, { authorization: `Bearer ${key}` }] as Array<Record<string, string>>) {
    const r = await svc.request('GET', '/admin/v1/seats', { headers })
    t.equal(r.status, 401)
    t.equal(r.body.error_code, 'authentication_required')
  }
})

t.test('seat moves, their audit trail, and refused moves', async (t) => {
  const svc = await startTestService(t)
  await svc.onboard('moves')
  const approve = await svc.admin('POST', '/admin/v1/seats/moves/approve', { reason: 'KYC done' })
  t.equal(approve.status, 200)
  t.match(approve.body.data, { seat_id: 'moves', status: 'approved', contact_email: 'buyer@moves.example', has_webhook_url: false })
  const again = await svc.admin('POST', '/admin/v1/seats/moves/approve')
  t.equal(again.status, 409)
  t.match(again.body, { error_code: 'invalid_transition', status: 'approved' })
  t.equal((await svc.admin('POST', '/admin/v1/seats/moves/reinstate')).status, 409, 'only a suspended seat can be reinstated')
  t.equal((await svc.admin('POST', '/admin/v1/seats/moves/suspend', { reason: 'chargeback' })).body.data.status, 'suspended')
  t.equal((await svc.admin('POST', '/admin/v1/seats/moves/reinstate')).body.data.status, 'approved', 'back to the status before suspension')
  t.equal((await svc.admin('POST', '/admin/v1/seats/moves/revoke')).body.data.status, 'revoked')
  t.equal((await svc.admin('POST', '/admin/v1/seats/moves/approve')).status, 409, 'revoked is final')
  const missing = await svc.admin('POST', '/admin/v1/seats/ghost/approve')
  t.equal(missing.status, 404)
  t.equal(missing.body.error_code, 'seat_not_found')
  const audit = await svc.admin('GET', '/admin/v1/audit?subject=seat:moves')
  t.same(audit.body.data.events.map((e: { type: string }) => e.type), ['audit.seat.revoked', 'audit.seat.reinstated', 'audit.seat.suspended', 'audit.seat.approved'])
  t.match(audit.body.data.events.at(-1), { actor: 'operator', reason: 'KYC done', data: { from: 'sandbox', to: 'approved' } })
  const page = await svc.admin('GET', '/admin/v1/audit?limit=2')
  t.equal(page.body.data.events.length, 2)
  t.equal(page.body.data.cursor.has_more, true)
  const next = await svc.admin('GET', `/admin/v1/audit?limit=2&cursor=${page.body.data.cursor.next}`)
  t.same(next.body.data.events.map((e: { type: string }) => e.type), ['audit.seat.suspended', 'audit.seat.approved'], 'the next page continues without gaps')
  t.equal((await svc.admin('GET', '/admin/v1/audit?limit=0')).status, 400)
})

t.test('listing seats with a status filter and pagination', async (t) => {
  const svc = await startTestService(t)
  for (const id of ['s1', 's2', 's3', 's4']) await svc.onboard(id)
  await svc.admin('POST', '/admin/v1/seats/s2/approve')
  const approved = await svc.admin('GET', '/admin/v1/seats?status=approved')
  t.same(approved.body.data.seats.map((s: { seat_id: string }) => s.seat_id), ['s2'])
  const first = await svc.admin('GET', '/admin/v1/seats?limit=3')
  t.equal(first.body.data.seats.length, 3)
  const second = await svc.admin('GET', `/admin/v1/seats?limit=3&cursor=${first.body.data.cursor.next}`)
  t.same([...first.body.data.seats, ...second.body.data.seats].map((s: { seat_id: string }) => s.seat_id), ['s1', 's2', 's3', 's4'])
  t.equal(second.body.data.cursor.has_more, false)
  t.equal((await svc.admin('GET', '/admin/v1/seats?status=weird')).status, 400)
})

t.test('operators narrow scopes and revoke keys', async (t) => {
  const svc = await startTestService(t)
  const { key } = await svc.onboard('keyed')
  const keyId = (await svc.request('GET', '/openrtb/v2/seat', { key })).body.data.key.key_id
  const narrowed = await svc.admin('PATCH', `/admin/v1/keys/${keyId}`, { scopes: ['inventory:read', 'stats:read'] })
  t.same(narrowed.body.data.scopes, ['inventory:read', 'stats:read'])
  t.same((await svc.request('GET', '/openrtb/v2/seat', { key })).body.data.key.scopes, ['inventory:read', 'stats:read'])
  t.equal((await svc.admin('PATCH', `/admin/v1/keys/${keyId}`, { scopes: ['everything'] })).status, 400)
  const revoked = await svc.admin('POST', `/admin/v1/keys/${keyId}/revoke`, { reason: 'leaked' })
  t.match(revoked.body.data, { revoked_at: String })
  t.equal((await svc.request('GET', '/openrtb/v2/seat', { key })).status, 401)
  t.equal((await svc.admin('GET', '/admin/v1/keys/nope')).body.error_code, 'key_not_found')
  const audit = await svc.admin('GET', `/admin/v1/audit?subject=key:${keyId}`)
  t.same(audit.body.data.events.map((e: { type: string }) => e.type), ['audit.key.revoked', 'audit.key.scopes_changed'])
})

t.test('the CLI calls the operator API', async (t) => {
  const svc = await startTestService(t)
  await svc.onboard('cli_seat')
  const env = { ...process.env, BASE_URL: svc.url, ADMIN_TOKEN: svc.adminToken }
  const cli = (...args: string[]) => run(process.execPath, ['dist/scripts/admin.js', ...args], { env })
  const approved = await cli('seats', 'approve', 'cli_seat', '--reason', 'verified')
  t.match(approved.stdout, /cli_seat.*approved/)
  const limits = await cli('seats', 'limits', 'cli_seat', 'bidding=250000', 'inventory=5000')
  t.match(limits.stdout, /bidding.*250000/)
  const list = await cli('seats', 'list', '--status', 'approved', '--json')
  t.same(JSON.parse(list.stdout).seats.map((s: { seat_id: string }) => s.seat_id), ['cli_seat'])
  const audit = await cli('audit')
  t.match(audit.stdout, /audit\.seat\.rate_limits_changed/)
  const failed = await cli('seats', 'approve', 'cli_seat').then(() => undefined, (e: { code: number, stderr: string }) => e)
  t.equal(failed?.code, 1, 'a refused action exits 1')
  t.match(failed?.stderr, /invalid_transition/)
  const help = await cli('--help')
  t.match(help.stdout, /Usage/)
})
