import { Validator } from '@seriousme/openapi-schema-validator'
import t from 'tap'
import { parseAdsTxt } from 'ads.txt'
import { errorTable } from '../src/errors.js'
import { schemas } from '../src/generated/schemas.js'
import { registerPartner } from './helpers/fleet.js'
import { freshIp, startTestService } from './helpers/service.js'

t.test('openapi.json: public, cached 5 minutes, valid OpenAPI 3.0, describing every route', async (t) => {
  const svc = await startTestService(t)
  const r = await svc.request('GET', '/openrtb/v2/openapi.json')
  t.equal(r.status, 200)
  t.equal(r.headers.get('cache-control'), 'public, max-age=300')
  t.match(r.headers.get('content-type'), /application\/json/)
  const doc = r.body
  t.match(doc, { openapi: /^3\.0\./, info: { version: '1.0.0' } })
  const validator = new Validator()
  const result = await validator.validate(doc)
  t.same(result.errors ?? [], [], 'no validation errors')
  t.ok(result.valid, 'valid OpenAPI 3.0')
  const expected = ['post /openrtb/v2/onboard', 'get /openrtb/v2/seat', 'post /openrtb/v2/keys', 'get /openrtb/v2/keys', 'delete /openrtb/v2/keys/{key_id}', 'post /v1/partner/register',
    'post /v1/partner/agent/register', 'get /admin/v1/seats', 'post /admin/v1/seats/{seat_id}/approve', 'put /admin/v1/seats/{seat_id}/rate-limits', 'patch /admin/v1/keys/{key_id}',
    'get /admin/v1/audit', 'get /sellers.json', 'get /app-ads.txt', 'get /ads.txt', 'get /healthz', 'get /readyz', 'get /metrics', 'get /openrtb/v2/openapi.json', 'get /docs/errors']
  for (const op of expected) {
    const [method, path] = op.split(' ') as [string, string]
    t.ok(doc.paths[path]?.[method], `${op} is described`)
  }
  const onboard = doc.paths['/openrtb/v2/onboard'].post
  t.match(onboard.requestBody.content['application/json'].schema, { $ref: '#/components/schemas/OnboardRequest' })
  t.ok(onboard.responses['409'].description.includes('seat_id_already_registered'))
  t.ok(onboard.responses['429'].headers['Retry-After'])
  t.ok(onboard.parameters.some((p: { $ref?: string }) => p.$ref === '#/components/parameters/IdempotencyKey'))
  t.match(doc.paths['/v1/partner/register'].post.responses['400'].content['application/json'].schema, { $ref: '#/components/schemas/NestedError' })
  t.equal(doc.components.schemas.KeySummary.properties.revoked_at.nullable, true, 'JSON Schema null unions become nullable')
  t.same(doc.components.schemas.ErrorCode.enum, errorTable().map((e) => e.code), 'the error-code enum is the error table')
  t.match(doc.info.description, /dry_run=true/)
  const hooks = doc['x-webhooks'] as Record<string, any>
  t.same(Object.keys(hooks).sort(), [...new Set([...schemas.WebhookEventType.enum, ...schemas.GeneralEventType.enum])].sort(), 'x-webhooks documents every event sent')
  t.match(hooks['screen.offline'].post.requestBody.content['application/json'].schema.allOf[1].properties.data.properties.object, { $ref: '#/components/schemas/ScreenStatusEvent' })
  const asPaths = await new Validator().validate({ ...doc, paths: Object.fromEntries(Object.entries(hooks).map(([event, item]) => [`/${event}`, item])) })
  t.same(asPaths.errors ?? [], [], 'each x-webhooks entry is a valid path item')
})

t.test('sellers.json, app-ads.txt and ads.txt: public, cached 24 hours, listing partners', async (t) => {
  const svc = await startTestService(t, { OPERATOR_DOMAIN: 'screens.example', OPERATOR_NAME: 'Example Screens', OPERATOR_EMAIL: 'adops@screens.example' })
  const reg = await svc.request('POST', '/v1/partner/register', { body: { name: 'Metro Displays', slug: 'metro-displays', contact_email: 'ops@metro.example', partner_type: 'screen_operator', domain: 'metro.example' }, headers: { 'x-forwarded-for': freshIp() } })
  t.equal(reg.status, 201)
  t.match(reg.body.data, { partner: { slug: 'metro-displays', seller_id: 'metro-displays', domain: 'metro.example' }, api_key: { key: /^oohb_pk_/ } })
  const sellers = await svc.request('GET', '/sellers.json')
  t.equal(sellers.headers.get('cache-control'), 'public, max-age=86400')
  t.match(sellers.body, { version: '1.0', contact_email: 'adops@screens.example', sellers: [{ seller_id: 'owned', seller_type: 'PUBLISHER', domain: 'screens.example' }, { seller_id: 'metro-displays', name: 'Metro Displays', domain: 'metro.example', seller_type: 'PUBLISHER', is_confidential: 0 }] })
  t.notOk(sellers.body.sellers.some((s: Record<string, unknown>) => 'success' in s), 'no API envelope')
  const appAds = await svc.request('GET', '/app-ads.txt')
  t.match(appAds.headers.get('content-type'), /^text\/plain/)
  t.equal(appAds.headers.get('cache-control'), 'public, max-age=86400')
  t.match(appAds.text, /^screens\.example, owned, DIRECT$/m)
  t.match(appAds.text, /^screens\.example, metro-displays, DIRECT$/m)
  t.match(appAds.text, /^OWNERDOMAIN=screens\.example$/m)
  const ads = await svc.request('GET', '/ads.txt')
  t.equal(ads.status, 301)
  t.match(ads.headers.get('location'), /\/app-ads\.txt$/)
  t.equal(ads.headers.get('cache-control'), 'public, max-age=86400')
})

t.test('each partner is labelled by its type: sellers.json seller_type and the app-ads.txt relationship, read by the npm ads.txt parser', async (t) => {
  const svc = await startTestService(t, { OPERATOR_DOMAIN: 'screens.example' })
  const types: Record<string, [string, string]> = {
    screen_operator: ['PUBLISHER', 'DIRECT'],
    integrator: ['PUBLISHER', 'DIRECT'],
    network: ['BOTH', 'DIRECT'],
    reseller: ['INTERMEDIARY', 'RESELLER'],
    agency: ['INTERMEDIARY', 'RESELLER']
  }
  const slugs: Record<string, string> = {}
  for (const type of Object.keys(types)) slugs[type] = (await registerPartner(svc, type)).slug
  const sellers = (await svc.request('GET', '/sellers.json')).body.sellers as Array<{ seller_id: string, seller_type: string }>
  const { fields, variables } = parseAdsTxt((await svc.request('GET', '/app-ads.txt')).text, { invalidLineAction: 'throw' })
  t.equal(variables.OWNERDOMAIN, 'screens.example')
  t.match(fields.find((f) => f.publisherAccountID === 'owned'), { domain: 'screens.example', accountType: 'DIRECT' }, 'the operator\'s own screens')
  for (const [type, [sellerType, relationship]] of Object.entries(types)) {
    t.equal(sellers.find((s) => s.seller_id === slugs[type])?.seller_type, sellerType, `${type}: seller_type ${sellerType}`)
    t.match(fields.find((f) => f.publisherAccountID === slugs[type]), { domain: 'screens.example', accountType: relationship }, `${type}: ${relationship} in app-ads.txt`)
  }
})

t.test('HEAD on the discovery files: the GET\'s status and headers, no body', async (t) => {
  const svc = await startTestService(t)
  for (const [path, status, type] of [['/sellers.json', 200, /application\/json/], ['/app-ads.txt', 200, /text\/plain/], ['/ads.txt', 301, /text\/plain/], ['/openrtb/v2/openapi.json', 200, /application\/json/]] as const) {
    const get = await fetch(`${svc.url}${path}`, { redirect: 'manual' })
    const head = await fetch(`${svc.url}${path}`, { method: 'HEAD', redirect: 'manual' })
    t.equal(head.status, status, `HEAD ${path}`)
    t.match(head.headers.get('content-type'), type)
    t.equal(head.headers.get('content-length'), String((await get.arrayBuffer()).byteLength), 'the length the GET sends')
    t.equal(head.headers.get('cache-control'), get.headers.get('cache-control'))
    t.equal((await head.arrayBuffer()).byteLength, 0, 'and no body')
  }
  t.equal((await fetch(`${svc.url}/ads.txt`, { method: 'HEAD', redirect: 'manual' })).headers.get('location'), `${svc.url}/app-ads.txt`)
  const post = await fetch(`${svc.url}/sellers.json`, { method: 'POST' })
  t.equal(post.status, 405)
  t.equal(post.headers.get('allow'), 'GET, HEAD')
  t.equal((await fetch(`${svc.url}/healthz`)).status, 200, 'still serving')
})

t.test('partner registration: nested errors, unique slugs, nothing written on failure', async (t) => {
  const svc = await startTestService(t)
  const send = (body: unknown) => svc.request('POST', '/v1/partner/register', { body, headers: { 'x-forwarded-for': freshIp() } })
  await send({ name: 'Taken', slug: 'taken', contact_email: 'a@taken.example', partner_type: 'network' })
  const before = svc.snapshot()
  const missing = await send({ name: 'No slug', contact_email: 'a@b.example', partner_type: 'network' })
  t.equal(missing.status, 400)
  t.match(missing.body, { error: { code: 'MISSING_REQUIRED_FIELD', type: 'invalid_request_error', param: 'slug', request_id: /^req_/, docs_url: /\/docs\/errors#missing_required_field$/, suggestion: String, related_endpoints: Array } })
  t.equal((await send({ name: 'Bad mail', slug: 'bad-mail', contact_email: 'nope', partner_type: 'network' })).body.error.code, 'INVALID_EMAIL')
  t.equal((await send({ name: 'Bad type', slug: 'bad-type', contact_email: 'a@b.example', partner_type: 'pirate' })).body.error.code, 'INVALID_PARAMETER')
  const dup = await send({ name: 'Again', slug: 'taken', contact_email: 'a@b.example', partner_type: 'network' })
  t.equal(dup.status, 409)
  t.equal(dup.body.error.code, 'ALREADY_EXISTS')
  const agentBad = await svc.request('POST', '/v1/partner/agent/register', { body: { name: 'x' }, headers: { 'x-forwarded-for': freshIp() } })
  t.equal(agentBad.status, 400)
  t.same(svc.snapshot(), before, 'nothing written')
  const ip = freshIp()
  for (let i = 0; i < 10; i++) await svc.request('POST', '/v1/partner/agent/register', { body: { name: `agent ${i}` }, headers: { 'x-forwarded-for': ip } })
  const limited = await svc.request('POST', '/v1/partner/agent/register', { body: { name: 'one too many' }, headers: { 'x-forwarded-for': ip } })
  t.equal(limited.status, 429)
  t.match(limited.body.error, { code: 'RATE_LIMITED', retry_after_seconds: Number })
})

/** What a Prometheus linter would object to in a text exposition: samples without HELP and TYPE, families declared twice. */
function expositionProblems (text: string): string[] {
  const help = new Set<string>()
  const type = new Map<string, string>()
  const problems: string[] = []
  for (const line of text.split('\n')) {
    const declared = /^# (HELP|TYPE) (\S+)(?: (\S+))?/.exec(line)
    if (declared !== null) {
      const [, kind, name, value] = declared
      const seen = kind === 'HELP' ? help.has(name!) : type.has(name!)
      if (seen) problems.push(`${kind} ${name} declared twice`)
      if (kind === 'HELP') help.add(name!)
      else type.set(name!, value!)
      continue
    }
    if (line === '' || line.startsWith('#')) continue
    const sample = /^([a-zA-Z_:][a-zA-Z0-9_:]*)/.exec(line)![1]!
    const family = type.has(sample) ? sample : sample.replace(/_(bucket|sum|count)$/, '')
    if (!help.has(family) || !type.has(family)) problems.push(`${sample} has no HELP or TYPE`)
  }
  return problems
}

t.test('health, readiness, metrics and the error reference', async (t) => {
  const svc = await startTestService(t)
  t.match((await svc.request('GET', '/healthz')).body, { success: true, data: { status: 'ok', version: '1.0.0' } })
  t.match((await svc.request('GET', '/readyz')).body.data, { status: 'ok', checks: { store: 'ok' } })
  await svc.onboard('metered')
  await svc.request('GET', '/openrtb/v2/seat')
  const metrics = await svc.request('GET', '/metrics')
  t.match(metrics.headers.get('content-type'), /^text\/plain; version=0\.0\.4/)
  t.match(metrics.text, /oohbid_http_requests_total\{method="POST",route="\/openrtb\/v2\/onboard",status="201"\} 1/)
  t.match(metrics.text, /oohbid_http_requests_total\{method="GET",route="\/openrtb\/v2\/seat",status="401"\} 1/)
  t.match(metrics.text, /oohbid_http_request_duration_seconds_bucket\{method="POST",route="\/openrtb\/v2\/onboard",le="\+Inf"\} 1/)
  t.match(metrics.text, /oohbid_outbox_pending_events 1/)
  t.same(expositionProblems(metrics.text), [], 'every family has HELP and TYPE before its samples, each once (what promtool check metrics asks)')
  for (const name of ['process_cpu_seconds_total', 'process_cpu_user_seconds_total', 'process_cpu_system_seconds_total', 'process_start_time_seconds', 'process_resident_memory_bytes', 'process_virtual_memory_bytes', 'process_heap_bytes', 'process_open_fds', 'process_max_fds']) {
    t.match(metrics.text, new RegExp(`^${name} \\d`, 'm'), `the standard ${name}`)
  }
  const docs = await svc.request('GET', '/docs/errors')
  for (const { code } of errorTable()) t.match(docs.text, `id="${code}"`)
})
