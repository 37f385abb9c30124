import { ApiError, errorTable } from '../../errors.js'
import { held, ok, raw, route, type RouteDef } from '../../http/route.js'
import type { Deps } from '../../deps.js'
import { VERSION } from '../../version.js'

function escapeHtml (s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;')
}

/** Liveness, readiness, Prometheus metrics and the error-code reference that docs_url points at. */
export function opsRoutes ({ clock, outbox, funnel, analytics, scrape, readiness }: Deps, openapi: () => string): RouteDef[] {
  const started = clock.now()
  const common = { tag: 'Operations', envelope: 'flat', auth: 'none', rateGroup: 'ops' } as const
  const errorsPage = '<!doctype html><meta charset="utf-8"><title>oohbid error codes</title><style>body{font:15px system-ui;margin:2em}td,th{padding:4px 10px;text-align:left;vertical-align:top}tr:target{background:#ffd}</style>' +
    '<h1>Error codes</h1><p>Flat envelope: <code>error_code</code>. Nested envelope: <code>error.code</code>, the same code in upper case.</p><table><tr><th>code</th><th>HTTP</th><th>meaning</th></tr>' +
    errorTable().map((e) => `<tr id="${e.code}"><td><code>${e.code}</code></td><td>${e.status}</td><td>${escapeHtml(e.description)}</td></tr>`).join('') + '</table>'
  return [
    route({ ...common, method: 'get', path: '/healthz', summary: 'Liveness', data: 'Health', handler: (ctx) => ok({ status: 'ok', version: VERSION, uptime_seconds: Math.round((ctx.now - started) / 1000) }) }),
    route({
      ...common,
      method: 'get',
      path: '/readyz',
      summary: 'Readiness: 503 service_unavailable while draining',
      description: 'On a cluster node (CLUSTER_NATS_URLS), checks.cluster says how many of its transactions wait to ship to the engine and through which revision it has applied the replicated state, and checks.logs which of the cluster\'s logs (its screen partitions, the claims, names and budget grants) the node owns, each as <log>@<epoch>. A node stays ready while the engine is away: it still serves bids and reads. It answers 503 service_unavailable while it catches up with the bidding book it started behind (past 30 s: its spots would miss bids), and once it has stopped following one of the logs (the engine lost entries it had applied, or trimmed past them): restarted, it rebuilds.',
      data: 'Health',
      errors: ['service_unavailable'],
      handler: () => {
        const node = readiness()
        if (node.unready !== undefined) throw new ApiError('service_unavailable', node.unready, { retry_after_seconds: 5 }, { 'Retry-After': '5' })
        return ok({ status: 'ok', version: VERSION, checks: { store: 'ok', outbox_pending: String(outbox.size()), funnel_pending: String(funnel.size()), analytics: analytics.backend ?? `unavailable${analytics.lastError !== undefined ? `: ${analytics.lastError}` : ''}`, ...node.checks } })
      }
    }),
    route({
      ...common,
      method: 'get',
      path: '/metrics',
      summary: 'Prometheus metrics',
      produces: 'text/plain',
      gathered: true,
      handler: () => held(scrape().then((text) => raw(text, 'text/plain; version=0.0.4; charset=utf-8')))
    }),
    route({ tag: 'Discovery', envelope: 'flat', auth: 'none', rateGroup: 'public', cacheSeconds: 3600, method: 'get', path: '/docs/errors', summary: 'Error code reference', produces: 'text/html', handler: () => raw(errorsPage, 'text/html; charset=utf-8') }),
    route({ tag: 'Discovery', envelope: 'flat', auth: 'none', rateGroup: 'public', cacheSeconds: 300, method: 'get', path: '/openrtb/v2/openapi.json', summary: 'This OpenAPI 3.0 description', produces: 'application/json', handler: () => raw(openapi(), 'application/json') })
  ]
}
