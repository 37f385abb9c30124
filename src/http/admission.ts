import type { Authenticator } from '../auth/authenticate.js'
import type { Principal } from '../auth/principal.js'
import { ApiError } from '../errors.js'
import type { RateGroup } from '../generated/types.js'
import type { Store } from '../store/store.js'
import type { RequestCoordination } from './coordination.js'
import { Idempotency } from './idempotency.js'
import type { Metrics } from './metrics.js'
import { limitFor, RATE_GROUPS, type RateDecision, type RateLimiter } from './rate-limit.js'
import { NO_QUERY } from './request-context.js'
import { isMutating, type Ctx, type RouteDef } from './route.js'
import { checkQueryLengths, decodePathParams } from './url-params.js'
import { validateQuery } from './validate.js'

/** What admitting a request needs from the service. */
export interface AdmissionDeps {
  store: Store
  auth: Authenticator
  limiter: RateLimiter
  metrics: Metrics
  idempotency: Idempotency
  lifecycle: { draining: boolean }
}

/** Each rate group's bit: the groups a request was counted in, kept when it is admitted again, allocate nothing. */
const GROUP_BITS = Object.fromEntries(Object.keys(RATE_GROUPS).map((g, i) => [g, 1 << i])) as Record<RateGroup, number>

/** Who is asking: the API key, else the client address. */
export function callerOf (ctx: Ctx): string {
  return ctx.principal !== undefined ? `key:${ctx.principal.key.key_id}` : `ip:${ctx.ip}`
}

/**
 * Everything a request is decided on from its line and headers alone: draining, path and query, rate limits,
 * authentication, scope, dry run and Idempotency-Key. A request may be admitted more than once (the coordination
 * waited for news from another node): it is counted in each rate group once.
 */
export class Admission {
  /** The last rate decision: what the RateLimit-* headers say. */
  rate: RateDecision | undefined
  /** The Idempotency-Key's claim on this node, when the request has one and is not a dry run. */
  claim: string | undefined
  readonly #deps: AdmissionDeps
  readonly #route: RouteDef
  readonly #ctx: Ctx
  readonly #coord: RequestCoordination
  readonly #paramNames: readonly string[]
  readonly #rawParams: string[]
  /** The rate groups this request was counted in (GROUP_BITS). */
  #counted = 0

  constructor (deps: AdmissionDeps, route: RouteDef, ctx: Ctx, coord: RequestCoordination, paramNames: readonly string[], rawParams: string[]) {
    this.#deps = deps
    this.#route = route
    this.#ctx = ctx
    this.#coord = coord
    this.#paramNames = paramNames
    this.#rawParams = rawParams
  }

  /** Throws the refusal: an ApiError, or a wait the coordination recognises (RequestCoordination.again). */
  admit (): void {
    const { lifecycle, auth } = this.#deps
    const route = this.#route
    const ctx = this.#ctx
    this.#deps.store.refresh()
    if (lifecycle.draining) throw new ApiError('service_unavailable', 'The service is shutting down; retry shortly.')
    // Before anything reads a parameter: the alias's rate limit, authentication and every lookup.
    ctx.params = decodePathParams(this.#paramNames, this.#rawParams)
    if (ctx.query !== NO_QUERY) checkQueryLengths(ctx.query)
    const group = RATE_GROUPS[route.rateGroup]
    const custom = route.rateLimit?.(ctx)
    if (custom !== undefined) this.#take(route.rateGroup, custom.subject, undefined, custom.limit)
    else if (group.per === 'ip') this.#take(route.rateGroup, `ip:${ctx.ip}`, undefined)
    let principal: Principal | undefined
    try {
      principal = auth.authenticate(route, ctx.headers)
    } catch (err) {
      // Failed authentication (API key or operator token) counts against the client address, which slows guessing.
      if (err instanceof ApiError && err.status === 401) this.#take('unauthenticated', `ip:${ctx.ip}`, undefined)
      throw err
    }
    ctx.principal = principal
    if (group.per === 'key') this.#take(route.rateGroup, callerOf(ctx), principal)
    auth.checkAccess(route, principal)
    route.admit?.(ctx)
    if (route.querySchema !== undefined) {
      const q: Record<string, unknown> = Object.fromEntries(ctx.query)
      validateQuery(route.querySchema, q)
      ctx.q = q
    }
    if (isMutating(ctx.method)) {
      const dry = ctx.query.get('dry_run')
      if (dry !== null && dry !== 'true' && dry !== 'false') throw new ApiError('invalid_parameter', 'dry_run must be true or false.', { param: 'dry_run' })
      ctx.dryRun = dry === 'true'
      const key = Idempotency.parse(ctx.headers['idempotency-key'])
      // A dry run persists nothing, so it neither replays nor records a key.
      if (key !== undefined && !ctx.dryRun) this.claim = this.#deps.idempotency.claim(callerOf(ctx), key)
    }
  }

  #take (group: RateGroup, subject: string, principal: Principal | undefined, given?: number): void {
    if ((this.#counted & GROUP_BITS[group]) !== 0) return
    const policy = limitFor(group, principal)
    const { windowMs } = policy
    const limit = given ?? policy.limit
    const decision = this.#deps.limiter.take(group, subject, limit, windowMs)
    this.#coord.rated(decision, group)
    this.rate = decision
    if (decision.allowed || decision.wait === true) {
      this.#counted |= GROUP_BITS[group]
      return
    }
    this.#deps.metrics.rejected(group)
    const extras: Record<string, number> = { retry_after_seconds: decision.resetSeconds }
    if (group === 'onboarding') extras.retry_after = decision.resetSeconds
    throw new ApiError('rate_limited', `Rate limit of ${limit} requests per ${windowMs / 1000} s exceeded for ${group}; retry in ${decision.resetSeconds} s.`, extras, { 'Retry-After': String(decision.resetSeconds) })
  }
}
