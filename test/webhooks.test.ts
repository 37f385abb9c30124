import t from 'tap'
import { startTestService } from './helpers/service.js'

// Webhook subscriptions as a buyer manages them: https on public hosts only, known events only, at most 10 active,
// the secret shown once, and each seat seeing and deleting only its own. (Delivery is the next part of this work.)

t.test('create, list without secrets, delete; ownership between two seats', async (t) => {
  const svc = await startTestService(t)
  const a = await svc.onboard('hooker')
  const b = await svc.onboard('other')
  const create = (key: string, body: unknown) => svc.request('POST', '/openrtb/v2/webhooks', { key, body })
  const r = await create(a.key, { url: 'https://hooks.example.com/oohbid', events: ['creative.moderation.completed', 'impression.verified', 'impression.verified'], description: 'prod receiver' })
  t.equal(r.status, 201)
  t.match(r.body.data, { webhook: { webhook_id: /^whk_[0-9a-f]{24}$/, url: 'https://hooks.example.com/oohbid', status: 'active', description: 'prod receiver', disabled_at: null, disabled_reason: null }, secret: /^whsec_[A-Za-z0-9_-]{43}$/ })
  t.same(r.body.data.webhook.events, ['creative.moderation.completed', 'impression.verified'], 'duplicates collapse')
  const { webhook, secret } = r.body.data
  const list = await svc.request('GET', '/openrtb/v2/webhooks', { key: a.key })
  t.same(list.body.data.webhooks.map((w: { webhook_id: string }) => w.webhook_id), [webhook.webhook_id])
  t.notOk(list.text.includes(secret) || list.text.includes('secret'), 'the list never shows a secret')
  t.notOk(JSON.stringify([...svc.service.store.webhooks.getRange()]).includes(secret), 'nor does the store hold it in the clear')
  t.same((await svc.request('GET', '/openrtb/v2/webhooks', { key: b.key })).body.data.webhooks, [], 'another seat sees none of them')
  t.match(await svc.request('DELETE', `/openrtb/v2/webhooks/${webhook.webhook_id}`, { key: b.key }), { status: 404, body: { error_code: 'webhook_not_found' } }, 'nor can it delete them')
  t.match(await svc.request('DELETE', `/openrtb/v2/webhooks/${webhook.webhook_id}`, { key: a.key }), { status: 200, body: { data: { webhook_id: webhook.webhook_id } } })
  t.match(await svc.request('DELETE', `/openrtb/v2/webhooks/${webhook.webhook_id}`, { key: a.key }), { status: 404, body: { error_code: 'webhook_not_found' } })
  t.same((await svc.request('GET', '/openrtb/v2/webhooks', { key: a.key })).body.data.webhooks, [])
})

t.test('URLs that are not https on a public host are invalid_webhook_url, and nothing is stored', async (t) => {
  const svc = await startTestService(t)
  const { key } = await svc.onboard('guarded')
  const refused = [
    'http://hooks.example.com/x', 'ftp://hooks.example.com/x', 'not a url', 'https://user:pw@hooks.example.com/x',
    'https://localhost/x', 'https://localhost./x', 'https://api.localhost/x', 'https://printer.local/x', 'https://metadata.internal/x', 'https://intranet/x',
    'https://127.0.0.1/x', 'https://10.1.2.3/x', 'https://172.16.0.9/x', 'https://192.168.1.1/x', 'https://169.254.169.254/latest', 'https://100.64.0.1/x', 'https://0.0.0.0/x', 'https://224.0.0.1/x',
    'https://2130706433/x', 'https://0x7f000001/x', 'https://0177.0.0.1/x', 'https://127.1/x',
    'https://[::1]/x', 'https://[fd00::1]/x', 'https://[fe80::1]/x', 'https://[::ffff:127.0.0.1]/x', 'https://[::ffff:10.0.0.1]/x', 'https://[64:ff9b::a00:1]/x'
  ]
  for (const url of refused) t.match(await svc.request('POST', '/openrtb/v2/webhooks', { key, body: { url, events: ['screen.offline'] } }), { status: 400, body: { error_code: 'invalid_webhook_url', param: 'url' } }, url)
  t.equal([...svc.service.store.webhooks.getRange()].length, 0, 'nothing was stored')
  t.equal((await svc.request('POST', '/openrtb/v2/webhooks', { key, body: { url: 'https://93.184.215.14/hook', events: ['screen.offline'] } })).status, 201, 'a public address is fine')
})

t.test('events outside the list, missing fields, and the limit of 10 active webhooks', async (t) => {
  const svc = await startTestService(t)
  const { key } = await svc.onboard('limited')
  const create = (body: unknown) => svc.request('POST', '/openrtb/v2/webhooks', { key, body })
  t.match(await create({ url: 'https://h.example.com/x', events: ['bid.won'] }), { status: 400, body: { error_code: 'invalid_events', param: 'events' } })
  t.match(await create({ url: 'https://h.example.com/x', events: ['screen.online', 'campaign.paused'] }), { status: 400, body: { error_code: 'invalid_events' } })
  t.match(await create({ url: 'https://h.example.com/x', events: [] }), { status: 400 })
  t.match(await create({ url: 'https://h.example.com/x' }), { status: 400, body: { error_code: 'missing_required_field' } })
  t.match(await create({ events: ['screen.online'] }), { status: 400, body: { error_code: 'missing_required_field' } })
  for (let i = 0; i < 10; i++) t.equal((await create({ url: `https://h${i}.example.com/x`, events: ['screen.online'] })).status, 201)
  t.match(await create({ url: 'https://h10.example.com/x', events: ['screen.online'] }), { status: 409, body: { error_code: 'webhook_limit_reached' } })
  const first = (await svc.request('GET', '/openrtb/v2/webhooks', { key })).body.data.webhooks.at(-1)
  await svc.request('DELETE', `/openrtb/v2/webhooks/${first.webhook_id}`, { key })
  t.equal((await create({ url: 'https://h10.example.com/x', events: ['screen.online'] })).status, 201, 'room again after a delete')
  const other = await svc.onboard('dryrunner')
  const dry = await svc.request('POST', '/openrtb/v2/webhooks?dry_run=true', { key: other.key, body: { url: 'https://h11.example.com/x', events: ['screen.online'] } })
  t.match(dry.body, { dry_run: true })
  t.notOk('secret' in dry.body.data, 'a dry run mints no secret')
  t.same((await svc.request('GET', '/openrtb/v2/webhooks', { key: other.key })).body.data.webhooks, [], 'and stores nothing')
})

t.test('the test escape hatch ALLOW_PRIVATE_CALLBACK_URLS lets loopback receivers in', async (t) => {
  const svc = await startTestService(t, { ALLOW_PRIVATE_CALLBACK_URLS: 'true' })
  const { key } = await svc.onboard('tester')
  t.equal((await svc.request('POST', '/openrtb/v2/webhooks', { key, body: { url: 'https://127.0.0.1:9443/hook', events: ['screen.online'] } })).status, 201)
  t.match(await svc.request('POST', '/openrtb/v2/webhooks', { key, body: { url: 'http://127.0.0.1:9443/hook', events: ['screen.online'] } }), { status: 400, body: { error_code: 'invalid_webhook_url' } }, 'still https only')
})
