import { generateSync } from 'json-schema-faker'
import t from 'tap'
import { schemas, type SchemaTitle } from '../src/generated/schemas.js'
import * as validators from '../src/generated/validators.js'
import { isMutating, type RouteDef } from '../src/http/route.js'
import { freshIp, startTestService, type TestService } from './helpers/service.js'
import { codeOf, fill, fixtures, paramOf, validBodies, type SweepFixtures } from './helpers/sweep.js'

// Hostile input against every operation of the served OpenAPI document, as an attacker would send it: malformed
// percent-escapes and overlong values in path parameters, overlong and malformed query values, and overlong strings
// in every field of a valid body (the sweep's own, and one generated from the schema with every optional field).
// No answer is a 5xx, malformed and overlong path parameters are 400 invalid_parameter in the route's envelope, and
// the service serves on. Mutating routes are sent as dry runs, so each request meets the real handler and lookups
// against the same fixtures without changing them for the next one.

const ESCAPES = ['%', '%zz', '%E0%A4%A', '%FF', '%C0%AF', '%ED%A0%80']
const LONG_PARAM = ['p'.repeat(257), 'p'.repeat(5000), 'p'.repeat(10_000)]
const LONG_QUERY = ['q'.repeat(5000), 'q'.repeat(10_000)]
const LONG_FIELD = ['f'.repeat(5000), 'f'.repeat(100_000)]
// Numbers a query string can spell that are not finite: Ajv coerced them past minimum and maximum.
const NOT_FINITE = ['Infinity', '-Infinity', '1e400']

const byId = new Map(Object.values(schemas).map((s) => [s.$id as string, s]))
type Validator = ((data: unknown) => boolean)

/** A body of the schema with every optional field, from the first seed that validates. */
function generated (title: SchemaTitle): unknown {
  for (let seed = 1; seed <= 20; seed++) {
    const body = generateSync(schemas[title] as never, { seed, refResolver: (ref) => byId.get(ref) as never, optionalsProbability: 1, maxItems: 2, maxLength: 24 })
    if ((validators as unknown as Record<string, Validator>)[title]!(body)) return body
  }
  return undefined
}

/** Every path to a string in a JSON value (array items included). */
function stringPaths (value: unknown, at: Array<string | number> = []): Array<Array<string | number>> {
  if (typeof value === 'string') return [at]
  if (Array.isArray(value)) return value.flatMap((v, i) => stringPaths(v, [...at, i]))
  if (value !== null && typeof value === 'object') return Object.entries(value).flatMap(([k, v]) => stringPaths(v, [...at, k]))
  return []
}

function replaced (value: unknown, path: Array<string | number>, by: string): unknown {
  if (path.length === 0) return by
  const copy: any = Array.isArray(value) ? [...value] : { ...(value as object) }
  copy[path[0]!] = replaced(copy[path[0]!], path.slice(1), by)
  return copy
}

interface Probe { path: string, body?: unknown, what: string }

async function send (svc: TestService, route: RouteDef, creds: Record<string, string | undefined>, probe: Probe) {
  const dry = isMutating(route.method) ? `${probe.path.includes('?') ? '&' : '?'}dry_run=true` : ''
  const key = creds[route.auth]
  const headers: Record<string, string> = { 'x-forwarded-for': freshIp(), ...(route.rawBody === true ? { 'content-type': 'image/png' } : {}) }
  return svc.request(route.method.toUpperCase(), probe.path + dry, {
    headers,
    ...(key !== undefined ? { key } : {}),
    ...(route.rawBody === true ? { raw: 'bytes' } : probe.body !== undefined ? { body: probe.body } : {})
  })
}

/** The path with one parameter set to a hostile raw value and the others to the fixtures' ids. */
function withParam (routePath: string, name: string, raw: string, f: SweepFixtures): string {
  return fill(routePath.replace(`:${name}`, '\u0000'), f).replace('\u0000', raw)
}

t.test('fuzz: hostile paths, queries and bodies on every operation of the OpenAPI document answer no 5xx', async (t) => {
  const svc = await startTestService(t)
  const f = await fixtures(svc)
  // The sweep's seat sends thousands of requests per group: lift its limits so that every probe meets the handler.
  const limits = Object.fromEntries(['bidding', 'inventory', 'creatives', 'campaigns', 'deals', 'reporting', 'account'].map((g) => [g, 1_000_000]))
  t.equal((await svc.admin('PUT', '/admin/v1/seats/sweep/rate-limits', { limits })).status, 200)
  await svc.admin('PUT', '/admin/v1/bidder-aliases/sweep-exchange', { name: 'Sweep Exchange', ip_allowlist: ['0.0.0.0/0'], rate_limit_per_minute: 1_000_000 })
  const creds: Record<string, string | undefined> = { seat: f.seatKey, key: f.seatKey, partner: f.partnerKey, admin: svc.adminToken }
  const bodies = validBodies(f)
  const doc = (await svc.request('GET', '/openrtb/v2/openapi.json')).body
  let operations = 0
  let requests = 0
  const fivexx: string[] = []
  const check = async (route: RouteDef, probe: Probe) => {
    const r = await send(svc, route, creds, probe)
    requests++
    if (r.status >= 500) fivexx.push(`${route.method.toUpperCase()} ${route.path} ${probe.what}: ${r.status} ${r.text.slice(0, 200)}`)
    return r
  }

  for (const [docPath, item] of Object.entries(doc.paths as Record<string, Record<string, any>>)) {
    for (const [method, op] of Object.entries(item)) {
      if (!['get', 'post', 'put', 'patch', 'delete'].includes(method)) continue
      const routePath = docPath.replace(/\{(\w+)\}/g, ':$1')
      const route = svc.service.routes.find((r) => r.path === routePath && r.method === method)
      if (route === undefined) { t.fail(`${method} ${docPath} is documented but not served`); continue }
      operations++
      const name = `${method.toUpperCase()} ${route.path}`
      const base = fill(route.path, f)
      const valid = bodies[name]
      const body = route.body === undefined ? undefined : (valid !== undefined && valid !== null ? valid : generated(route.body))

      for (const param of [...route.path.matchAll(/:(\w+)/g)].map((m) => m[1]!)) {
        for (const raw of [...ESCAPES, ...LONG_PARAM]) {
          const r = await check(route, { path: withParam(route.path, param, raw, f), body, what: `path ${param}=${raw.slice(0, 12)} (${raw.length})` })
          if (r.status !== 400 || codeOf(route.envelope, r.body) !== 'invalid_parameter') {
            t.fail(`${name}: ${param}=${raw.slice(0, 12)}… (${raw.length} characters) answered ${r.status} ${r.text.slice(0, 160)}`)
          }
        }
      }
      const queries = ((op.parameters ?? []) as Array<{ in: string, name: string, required?: boolean, schema?: { type?: string } }>).filter((p) => p.in === 'query')
      // A route that requires other query parameters (proof-of-play's dates) refuses their absence first.
      const refusal = queries.some((p) => p.required === true) ? /^(invalid_parameter|missing_required_field)$/ : /^invalid_parameter$/
      for (const { name: q, schema } of queries) {
        for (const value of [...LONG_QUERY, '%zz', '%ED%A0%80']) {
          await check(route, { path: `${base}?${q}=${value}`, body, what: `query ${q} (${value.length})` })
        }
        for (const value of NOT_FINITE) {
          const r = await check(route, { path: `${base}?${q}=${value}`, body, what: `query ${q}=${value}` })
          const numeric = schema?.type === 'integer' || schema?.type === 'number'
          const code = codeOf(route.envelope, r.body) ?? ''
          if (numeric && (r.status !== 400 || !refusal.test(code) || (code === 'invalid_parameter' && paramOf(route.envelope, r.body) !== q))) {
            t.fail(`${name}: ${q}=${value} answered ${r.status} ${r.text.slice(0, 160)}`)
          }
        }
      }
      if (route.body !== undefined) {
        const bases = [body, generated(route.body)].filter((b) => b !== undefined)
        for (const b of bases) {
          for (const at of stringPaths(b)) {
            for (const long of LONG_FIELD) await check(route, { path: base, body: replaced(b, at, long), what: `body ${at.join('.')} (${long.length})` })
          }
        }
      }
    }
  }
  t.ok(operations >= 100, `${operations} operations, ${requests} hostile requests`)
  t.same(fivexx, [], 'no 5xx')
  t.same(svc.logs.filter((l) => /unhandled error|could not answer/.test(l)), [], 'nothing reached the unhandled-error path')
  t.equal((await svc.request('GET', '/healthz')).status, 200, 'still serving')
})

t.test('fuzz: a hostile item of a batch is refused alone, with its field error, and the rest of the batch is accepted', async (t) => {
  const svc = await startTestService(t)
  const f = await fixtures(svc)
  const bodies = validBodies(f)
  const batches: Array<[string, string]> = [
    ['POST /v1/partner/heartbeats', 'heartbeats'],
    ['POST /v1/partner/audience', 'updates'],
    ['POST /v1/partner/devices/batch', 'devices'],
    ['POST /v1/partner/impressions', 'impressions']
  ]
  for (const [name, list] of batches) {
    const [good] = (bodies[name] as Record<string, Array<Record<string, unknown>>>)[list]!
    const idField = 'device_id' in good! ? 'device_id' : 'deviceId'
    const hostile: Array<[string, unknown]> = [
      ['an overlong id', { ...good, [idField]: 'd'.repeat(100_000) }],
      ['an id of 5000 characters', { ...good, [idField]: 'd'.repeat(5000) }],
      ['a malformed id', { ...good, [idField]: 'dev/\u0000%ED%A0%80' }],
      ['an id of the wrong type', { ...good, [idField]: { $gt: '' } }],
      ...stringPaths(good).map((at): [string, unknown] => [`an overlong ${at.join('.')}`, replaced(good, at, 'x'.repeat(100_000))])
    ]
    const items = [good, ...hostile.map(([, item]) => item), good]
    const r = await svc.request('POST', `/v1/partner/${name.split('/v1/partner/')[1]}?dry_run=true`, { key: f.partnerKey, body: { [list]: items } })
    t.equal(r.status, 200, `${name}: 200 with per-item results`)
    const results = r.body.data.results as Array<{ index: number, status: string, error?: { code: string } }>
    t.equal(results.length, items.length, `${name}: one result per item`)
    t.not(results[0]!.status, 'rejected', `${name}: the valid first item is accepted`)
    t.not(results[items.length - 1]!.status, 'rejected', `${name}: the valid last item is accepted`)
    hostile.forEach(([what], i) => {
      const result = results[i + 1]!
      // An overlong field that only names the device lets the item through to the device check (DEVICE_NOT_FOUND).
      t.equal(result.status, 'rejected', `${name}, ${what}: rejected`)
      t.match(result.error?.code, /^(INVALID_PARAMETER|MISSING_REQUIRED_FIELD|DEVICE_NOT_FOUND|CREATIVE_NOT_FOUND)$/, `${name}, ${what}: ${result.error?.code}`)
    })
  }
  t.same(svc.logs.filter((l) => /unhandled error|could not answer/.test(l)), [], 'nothing reached the unhandled-error path')
  t.equal((await svc.request('GET', '/healthz')).status, 200, 'still serving')
})
