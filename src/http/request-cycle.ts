import { randomUUID } from 'node:crypto'
import { performance } from 'node:perf_hooks'
import type { HttpRequest, HttpResponse } from 'uWebSockets.js'
import type { Authenticator } from '../auth/authenticate.js'
import type { Clock } from '../clock.js'
import type { ResolvedConfig } from '../config.js'
import { ApiError } from '../errors.js'
import type { Logger } from '../log.js'
import type { NodeLink } from './cluster-link.js'
import { presentedKey } from '../auth/keys.js'
import type { Store } from '../store/store.js'
import { clientIp, socketIp } from './client-address.js'
import { flatError, nestedError, statusLine } from './envelope.js'
import { checkQueryLengths, decodePathParams } from './url-params.js'
import { Idempotency } from './idempotency.js'
import type { Metrics, RouteSeries } from './metrics.js'
import { limitFor, RATE_GROUPS, type RateDecision, type RateLimiter } from './rate-limit.js'
import type { Principal } from '../auth/principal.js'
import { isMutating, RawJson, type Ctx, type Method, type Result, type RouteDef } from './route.js'
import { validate, validateQuery } from './validate.js'

/** What the request pipeline needs from the service. */
export interface HttpDeps {
  config: ResolvedConfig
  clock: Clock
  log: Logger
  store: Store
  auth: Authenticator
  limiter: RateLimiter
  metrics: Metrics
  idempotency: Idempotency
  lifecycle: Lifecycle
  /** On a cluster node: what its requests need of the cluster (src/http/cluster-link.ts). */
  cluster?: NodeLink
  /** The thread's journal (RouteDef.journaled): on a cluster node a journaled answer waits for its turn's commit. */
  journal?: { applied (): Promise<number> | undefined }
}

/** In-flight accounting for graceful shutdown. */
export interface Lifecycle {
  draining: boolean
  inFlight: number
  onIdle: (() => void) | undefined
}

/** An answer that can be written now. */
type Written = Exclude<Result, { kind: 'held' }>

/** Shared by requests without a query string; nothing mutates a request's query. */
const NO_QUERY = new URLSearchParams()

/** An Idempotency-Key's name among the names claimed across a cluster. */
const idempotencyName = (claim: string): string => `idempotency-key\u0000${claim}`

/** A body not asked for yet (RequestCycle.#admitAgainAfter). */
const NOT_READ = Symbol('not read')

/** Thrown by an admission that must wait for a rate window's grant from the cluster's engine. */
class RateWait {
  constructor (readonly granted: Promise<boolean>) {}
}

/** Thrown inside a dry run's transaction to roll it back while keeping the handler's answer. */
class Rollback {
  constructor (readonly result: Result) {}
}

function isJson (contentType: string | undefined): boolean {
  if (contentType === undefined) return false
  const type = contentType.split(';', 1)[0]!.trim().toLowerCase()
  return type === 'application/json' || (type.startsWith('application/') && type.endsWith('+json'))
}

/**
 * One request from arrival to the last byte: auth, rate limit, body, validation, idempotency, the handler (inside a
 * write transaction on mutating routes) and the reply. Every reply is written inside a uWS callback (the route callback
 * or the last onData), corked, so pipelined requests are answered in order; only computed routes hold theirs (#hold).
 */
export class RequestCycle {
  readonly #res: HttpResponse
  readonly #route: RouteDef
  readonly #deps: HttpDeps
  readonly #ctx: Ctx
  readonly #series: RouteSeries
  readonly #start = performance.now()
  readonly #warnings: string[] = []
  #rate: RateDecision | undefined
  #aborted = false
  #done = false
  #claim: string | undefined
  #chunks: Buffer[] = []
  #size = 0
  /** Whether this request already waited for its node to catch up with the cluster (a key refused once). */
  #caughtUp = false
  /**
   * A cluster node: the rate groups this request was counted in, kept when it is admitted again (only a cluster node
   * admits a request twice, so one node's requests allocate nothing here).
   */
  #counted: Set<string> | undefined
  /** A cluster node: the record this request locked (RouteDef.exclusive), its lock's number, and whether it still holds it. */
  #lock: { name: string, n: number, held: boolean } | undefined
  /** A cluster node: whether this request won its Idempotency-Key's claim in the engine, and still holds it. */
  #keyInCluster: 'won' | 'lost' | undefined
  #keyHeld = false
  /** When this request first waited for a rate window's grant (performance.now()). */
  #rateWaitSince: number | undefined
  /** A body read while the request waited to be admitted again: NOT_READ, null while arriving, undefined for none. */
  #waitedBody: Buffer | undefined | null | typeof NOT_READ = NOT_READ
  readonly #paramNames: readonly string[]
  readonly #rawParams: string[] = []
  /** A HEAD request: run as the GET it mirrors, answered with its status and headers only. */
  readonly #head: boolean

  constructor (res: HttpResponse, req: HttpRequest, route: RouteDef, deps: HttpDeps, paramNames: string[], series: RouteSeries) {
    this.#res = res
    this.#route = route
    this.#deps = deps
    this.#series = series
    const headers: Record<string, string> = {}
    // A header sent more than once is one list, joined with commas (RFC 9110, 5.3): a proxy such as HAProxy adds its
    // own X-Forwarded-For line after the client's, and keeping only the last would drop the client's address.
    req.forEach((k, v) => { headers[k] = headers[k] === undefined ? v : `${headers[k]}, ${v}` })
    // Copied raw now (uWS frees req when this callback returns), decoded inside run() where a bad escape is a 400.
    for (let i = 0; i < paramNames.length; i++) this.#rawParams.push(req.getParameter(i) ?? '')
    this.#paramNames = paramNames
    const query = req.getQuery()
    const warnings = this.#warnings
    const trusted = deps.config.trustProxy
    const method = req.getCaseSensitiveMethod().toLowerCase()
    this.#head = method === 'head'
    let ip: string | undefined
    this.#ctx = {
      requestId: `req_${randomUUID()}`,
      method: (this.#head ? 'get' : method) as Method,
      path: req.getUrl(),
      params: {},
      query: query ? new URLSearchParams(query) : NO_QUERY,
      q: undefined,
      headers,
      // Read when first asked (the rate limiter of address-keyed groups, the allowlists), while the response is open.
      get ip () {
        ip ??= clientIp(socketIp(res), headers['x-forwarded-for'], trusted)
        return ip
      },
      principal: undefined,
      body: undefined,
      dryRun: false,
      now: deps.clock.now(),
      warn: (m) => { warnings.push(m) }
    }
  }

  /** Runs the request; called synchronously from the uWS route callback. */
  run (): void {
    this.#deps.lifecycle.inFlight++
    this.#deps.metrics.inFlight++
    this.#res.onAborted(() => {
      this.#aborted = true
      this.#finish(499)
    })
    try {
      this.#admit()
      if (this.#route.body === undefined && this.#route.rawBody !== true) return this.#complete(undefined)
      this.#readBody((raw) => this.#complete(raw))
    } catch (err) {
      this.#refused(err)
    }
  }

  /**
   * An admission that did not pass. On a cluster node two refusals may be the cluster's news not reaching this node
   * yet, and are admitted again once it has: a key another node has just acknowledged, and a rate window whose grant
   * is on its way.
   */
  #refused (err: unknown): void {
    if (err instanceof RateWait) return this.#admitAgainAfter(err.granted)
    if (this.#refusedKey(err)) {
      this.#caughtUp = true
      return this.#admitAgainAfter(this.#deps.cluster!.caughtUp())
    }
    this.#fail(err, false)
  }

  /**
   * Whether a key this cluster node did not accept may be one another node has just acknowledged: a write is
   * acknowledged once the engine holds it, and reaches the other nodes milliseconds later.
   */
  #refusedKey (err: unknown): boolean {
    if (this.#deps.cluster === undefined || this.#caughtUp || this.#route.auth === 'admin') return false
    const presented = presentedKey(this.#ctx.headers)
    return err instanceof ApiError && err.code === 'authentication_required' && presented !== undefined && presented !== ''
  }

  /**
   * Admits the request again once wait settles (the node caught up with the cluster, or a rate window's grant
   * arrived), reading the body meanwhile: about a millisecond when the cluster's answer is at hand.
   */
  #admitAgainAfter (wait: Promise<unknown>): void {
    let settled = false
    const go = (): void => {
      const body = this.#waitedBody
      if (!settled || body === null || body === NOT_READ || this.#aborted || this.#done) return
      try {
        this.#admit()
        this.#complete(body)
      } catch (err) {
        this.#refused(err)
      }
    }
    try {
      // A copy: uWS frees the last chunk's memory when its callback returns, and this body waits past it.
      if (this.#waitedBody === NOT_READ) {
        if (this.#route.body === undefined && this.#route.rawBody !== true) this.#waitedBody = undefined
        else {
          this.#waitedBody = null
          this.#readBody((body) => { this.#waitedBody = Buffer.from(body); go() })
        }
      }
    } catch (err) {
      return this.#fail(err, false)
    }
    wait.catch(() => {}).finally(() => { settled = true; go() })
  }

  /** Everything decided from the headers alone: draining, auth, rate limit, scope, dry run, Idempotency-Key. */
  #admit (): void {
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
      // Failed authentication (API key or operator token) counts against the client address, which slows guessing;
      // once a request, though a cluster node may admit it again (#admitAgainAfter).
      if (err instanceof ApiError && err.status === 401) this.#take('unauthenticated', `ip:${ctx.ip}`, undefined)
      throw err
    }
    ctx.principal = principal
    if (group.per === 'key') {
      const subject = principal !== undefined ? `key:${principal.key.key_id}` : `ip:${ctx.ip}`
      this.#take(route.rateGroup, subject, principal)
    }
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
      if (key !== undefined && !ctx.dryRun) {
        this.#claim = this.#deps.idempotency.claim(principal !== undefined ? `key:${principal.key.key_id}` : `ip:${ctx.ip}`, key)
      }
    }
  }

  #take (group: RouteDef['rateGroup'], subject: string, principal: Principal | undefined, given?: number): void {
    // Counted in an earlier admission of this request (#admitAgainAfter).
    if (this.#counted?.has(group) === true) return
    const policy = limitFor(group, principal)
    const { windowMs } = policy
    const limit = given ?? policy.limit
    const decision = this.#deps.limiter.take(group, subject, limit, windowMs)
    if (decision.ask !== undefined) this.#deps.cluster?.rates.ask(decision.ask)
    // A cluster node that has spent its part of the window waits for the engine's next grant rather than refuse a
    // request under the limit (it asked ahead, so this is rare); a failed authentication is refused anyway.
    if (decision.wait === true && group !== 'unauthenticated') {
      const rates = this.#deps.cluster!.rates
      this.#rateWaitSince ??= performance.now()
      if (performance.now() - this.#rateWaitSince < rates.waitMs) throw new RateWait(rates.granted(rates.waitMs))
      throw new ApiError('service_unavailable', 'The cluster cannot grant this rate window right now; retry shortly.', { retry_after_seconds: 1 }, { 'Retry-After': '1' })
    }
    this.#rate = decision
    if (decision.allowed || decision.wait === true) {
      if (this.#deps.cluster !== undefined) (this.#counted ??= new Set()).add(group)
      return
    }
    this.#deps.metrics.rejected(group)
    const extras: Record<string, number> = { retry_after_seconds: decision.resetSeconds }
    if (group === 'onboarding') extras.retry_after = decision.resetSeconds
    throw new ApiError('rate_limited', `Rate limit of ${limit} requests per ${windowMs / 1000} s exceeded for ${group}; retry in ${decision.resetSeconds} s.`, extras, { 'Retry-After': String(decision.resetSeconds) })
  }

  /** Checks the body's headers, then reads it and hands it to then (inside the callback that delivered its last byte). */
  #readBody (then: (raw: Buffer) => void): void {
    const headers = this.#ctx.headers
    const max = this.#route.maxBodyBytes ?? this.#deps.config.maxBodyBytes
    const declared = headers['content-length'] === undefined ? undefined : Number(headers['content-length'])
    const chunked = /chunked/i.test(headers['transfer-encoding'] ?? '')
    if ((declared === undefined || declared === 0) && !chunked) return then(Buffer.alloc(0))
    if (this.#route.rawBody !== true && !isJson(headers['content-type'])) throw new ApiError('unsupported_media_type', 'Send the body as Content-Type: application/json.')
    if (declared !== undefined && declared > max) throw new ApiError('payload_too_large', `The body is ${declared} bytes; this route accepts at most ${max}.`)
    this.#res.onData((chunk, isLast) => {
      if (this.#done) return
      try {
        this.#size += chunk.byteLength
        if (this.#size > max) throw new ApiError('payload_too_large', `The body exceeds ${max} bytes.`)
        if (isLast && this.#chunks.length === 0) {
          // uWS owns the chunk's memory only until this callback returns; the handler runs before that, but a raw
          // body may be kept by the handler, so it gets a copy.
          return then(this.#route.rawBody === true ? Buffer.from(new Uint8Array(chunk)) : Buffer.from(chunk))
        }
        this.#chunks.push(Buffer.from(new Uint8Array(chunk)))
        if (isLast) then(Buffer.concat(this.#chunks))
      } catch (err) {
        this.#fail(err, true)
      }
    })
  }

  /** Parses, validates, replays or runs the handler, and replies. */
  #complete (raw: Buffer | undefined): void {
    const { route, ctx } = { route: this.#route, ctx: this.#ctx }
    // The body may have arrived over several turns: read what other threads committed meanwhile.
    if (raw !== undefined) this.#deps.store.refresh()
    try {
      route.verifyRaw?.(ctx, raw ?? Buffer.alloc(0))
      if (route.rawBody === true) ctx.body = raw ?? Buffer.alloc(0)
      if (route.body !== undefined) {
        try {
          let body: unknown = {}
          if (raw !== undefined && raw.length > 0) {
            try {
              body = JSON.parse(raw.toString('utf8'))
            } catch {
              throw new ApiError('invalid_json', 'The request body is not valid JSON.')
            }
          }
          validate(route.body, body)
          ctx.body = body
        } catch (err) {
          const invalid = route.invalidBody
          if (invalid === undefined || !(err instanceof ApiError)) throw err
          throw new ApiError(invalid.code, err.message, { ...invalid.extras, ...(err.extras.param !== undefined ? { param: err.extras.param } : {}) })
        }
      }
      const fingerprint = this.#claim !== undefined ? Idempotency.fingerprint(ctx.method, ctx.path, ctx.query.toString(), raw?.toString('utf8') ?? '') : ''
      if (this.#claim !== undefined) {
        const stored = this.#deps.idempotency.replay(this.#claim, fingerprint)
        if (stored !== undefined) {
          const replay = () => this.#send(stored.status, stored.headers['content-type'] ?? 'application/json', stored.body, { ...stored.headers, 'Idempotent-Replayed': 'true' })
          // The first answer may have been a 503 whose write has not shipped yet: the replay waits for all this node recorded.
          const recorded = this.#deps.store.changes?.recorded ?? 0
          return recorded > 0 ? this.#replicated(recorded, replay) : replay()
        }
        if (this.#deps.cluster !== undefined) {
          if (this.#keyInCluster === undefined) return this.#claimKeyInCluster(this.#claim, raw)
          if (this.#keyInCluster === 'lost') throw new ApiError('idempotency_key_in_use', 'A request with this Idempotency-Key is still in progress on another node; retry when it has finished.')
        }
      }
      const exclusive = this.#deps.cluster !== undefined && !ctx.dryRun ? route.exclusive?.(ctx) : undefined
      if (exclusive !== undefined && this.#lock === undefined) return this.#lockRecord(exclusive, raw)
      const unique = this.#deps.cluster !== undefined && !ctx.dryRun ? route.unique?.(ctx) : undefined
      if (unique !== undefined) {
        // The claim is the caller's request: the same request retried by the same caller (its first claim landed
        // though its answer was lost) finds the name held by itself.
        const owner = `${ctx.principal !== undefined ? `key:${ctx.principal.key.key_id}` : `ip:${ctx.ip}`} ${Idempotency.fingerprint(ctx.method, ctx.path, ctx.query.toString(), raw?.toString('utf8') ?? '')}`
        return this.#claimed(unique, owner, fingerprint)
      }
      this.#answer(this.#execute(fingerprint), fingerprint)
    } catch (err) {
      this.#fail(err, false)
    }
  }

  /** Replies, holds, or waits for the engine to hold what the handler's transaction changed (a cluster node). */
  #answer (result: Result, fingerprint: string): void {
    if (result.kind === 'held') return this.#hold(result.answer, fingerprint)
    const seq = this.#deps.store.changes?.takeCommitted() ?? 0
    if (seq > 0) return this.#replicated(seq, () => this.#reply(result))
    // A cluster node's bids and the settlements of its spots are in the engine before they are acknowledged: a
    // journaled write waits for its turn's commit, then for what that recorded to ship. Such an answer comes on a
    // later tick, so these routes do not support HTTP pipelining on a cluster node.
    const turn = this.#deps.cluster !== undefined && this.#route.journaled === true ? this.#deps.journal?.applied() : undefined
    if (turn !== undefined) {
      turn.then((seq) => seq > 0 ? this.#replicated(seq, () => this.#reply(result)) : this.#reply(result), (err: unknown) => this.#fail(err, false))
      return
    }
    this.#reply(result)
  }

  /**
   * Runs a step in the cluster's engine that must come before the handler (a claim, a lock), then completes the
   * request again, after catching up with the cluster when the step says so. The body is copied: uWS frees the last
   * chunk's memory when its callback returns, and it is read again after the step.
   */
  #completeAfter (raw: Buffer | undefined, step: () => Promise<{ catchUp: 'no' | 'try' | 'must' }>): void {
    const body = raw === undefined ? undefined : Buffer.from(raw)
    step().then(async ({ catchUp }) => {
      // Aborted meanwhile: #finish ran before the step held anything, so what it took is given back here.
      if (this.#aborted) return this.#releaseHeld()
      if (catchUp !== 'no' && !await this.#deps.cluster!.caughtUp() && catchUp === 'must') {
        throw new ApiError('service_unavailable', 'This node could not catch up with the cluster in time to read the record; retry shortly.', { retry_after_seconds: 1 }, { 'Retry-After': '1' })
      }
      this.#deps.store.refresh()
      this.#complete(body)
    }).catch((err: unknown) => { this.#fail(err, false) })
  }

  /**
   * On a cluster node, an Idempotency-Key is the request's across the cluster before the handler runs: a claim in the
   * engine (the unique names' bucket), since the same key retried through another node at the same moment must not run
   * twice. A key another request holds is first looked up again once this node has caught up with the cluster: its
   * outcome replays if that request has finished, else 409 idempotency_key_in_use. These requests already wait for
   * their outcome to ship (the stored outcome is replicated), so the claim costs them no pipelining.
   */
  #claimKeyInCluster (claim: string, raw: Buffer | undefined): void {
    // A live holder stores its outcome within the ack timeout: a claim twice that old belongs to a request that ended
    // without one (refused for want of a quorum after its claim had landed, or its node died), and is taken over.
    const takeOverAfterMs = 2 * this.#deps.config.cluster!.ackTimeoutMs
    this.#completeAfter(raw, async () => {
      const won = await this.#deps.cluster!.names.claim(idempotencyName(claim), this.#ctx.requestId, takeOverAfterMs)
      this.#keyInCluster = won ? 'won' : 'lost'
      this.#keyHeld = won
      // The request holding the key may have finished on another node, its outcome on its way here.
      return { catchUp: won ? 'no' : 'try' }
    })
  }

  /**
   * Locks the record the route rewrites (RouteDef.exclusive) cluster-wide, and catches up with the cluster so that the
   * handler reads its latest version; the lock is given back when the request ends, after its write has shipped.
   */
  #lockRecord (name: string, raw: Buffer | undefined): void {
    this.#completeAfter(raw, async () => {
      this.#lock = { name, n: await this.#deps.cluster!.locks.lock(name, this.#ctx.requestId), held: true }
      // The handler must read the record as the last holder of the lock left it.
      return { catchUp: 'must' }
    })
  }

  /**
   * Gives back, once, what this request holds in the engine: its record's lock, and its Idempotency-Key's claim unless
   * the key has an outcome stored (then the claim stays until it lapses: a retry through a node that has not applied
   * the outcome yet must not run the request again).
   */
  #releaseHeld (): void {
    const cluster = this.#deps.cluster
    if (cluster === undefined) return
    if (this.#lock?.held === true) {
      cluster.locks.unlock(this.#lock.name, this.#lock.n)
      this.#lock.held = false
    }
    const claim = this.#claim
    if (this.#keyHeld && claim !== undefined && !this.#deps.idempotency.stored(claim)) void cluster.names.release(idempotencyName(claim), this.#ctx.requestId)
    this.#keyHeld = false
  }

  /**
   * Claims the route's unique name across the cluster, then runs the handler; a name another request holds answers
   * the route's conflict. A won name is given back when the handler's write does not commit.
   */
  #claimed (unique: { name: string, taken: () => ApiError }, owner: string, fingerprint: string): void {
    const names = this.#deps.cluster!.names
    names.claim(unique.name, owner).then(async (won) => {
      if (this.#aborted) {
        if (won) await names.release(unique.name, owner)
        return
      }
      // Rows other nodes committed while the claim was on its way.
      this.#deps.store.refresh()
      if (!won) throw unique.taken()
      let result: Result
      try {
        result = this.#execute(fingerprint)
      } catch (err) {
        // Given back before the answer: a client that corrects its request and sends it again finds the name free.
        await names.release(unique.name, owner)
        throw err
      }
      this.#answer(result, fingerprint)
    }).catch((err: unknown) => { this.#fail(err, false) })
  }

  /**
   * Keeps the response open until a computed or gathered route's answer settles (onAborted was registered in run()),
   * then writes it corked. Any other route must not hold: its clients may pipeline.
   */
  #hold (answer: Promise<Result>, fingerprint: string): void {
    const { route, ctx } = { route: this.#route, ctx: this.#ctx }
    if (route.computed !== true && route.gathered !== true && route.agent !== true) {
      // The answer is refused, but it still settles: its failure must not go unhandled and end the process.
      answer.catch(() => {})
      throw new Error(`${route.method.toUpperCase()} ${route.path} held its response but is neither computed, gathered nor an agent endpoint`)
    }
    // What the answer records commits on later turns, among other requests' commits: a cluster node answers once
    // everything this node recorded until the answer settled has shipped, when the answer recorded anything.
    const before = this.#deps.store.changes?.recorded ?? 0
    answer.then((result) => {
      if (this.#aborted) return
      if (result.kind === 'held') throw new Error('a held answer settled into another held answer')
      const claim = this.#claim
      if (claim !== undefined && !ctx.dryRun) this.#deps.store.write(() => this.#save(claim, fingerprint, result))
      const recorded = this.#deps.store.changes?.recorded ?? 0
      if (recorded > before) return this.#replicated(recorded, () => this.#reply(result))
      this.#reply(result)
    }).catch((err: unknown) => { this.#fail(err, false) })
  }

  /**
   * On a cluster node, answers a write to replicated state once the engine's quorum holds it (src/cluster), so no
   * node's loss can take an acknowledged key, seat or partner with it. These writes are rare and their clients do
   * not pipeline. Past CLUSTER_ACK_TIMEOUT_MS the answer is 503: the write stands here and ships when the engine is
   * back, and a retry with the same Idempotency-Key replays its outcome.
   */
  #replicated (seq: number, answer: () => void): void {
    const cluster = this.#deps.cluster
    const timeoutMs = this.#deps.config.cluster?.ackTimeoutMs
    if (cluster === undefined || timeoutMs === undefined) return answer()
    cluster.shipped.wait(seq, timeoutMs).then((held) => {
      if (held) return answer()
      this.#fail(new ApiError('service_unavailable', 'The change is saved on this node, but the cluster has not confirmed it yet; retry with the same Idempotency-Key for its outcome.', { retry_after_seconds: 1 }, { 'Retry-After': '1' }), false)
    }).catch((err: unknown) => { this.#fail(err, false) })
  }

  #save (claim: string, fingerprint: string, result: Written): void {
    const { body, contentType, status } = this.#render(result)
    this.#deps.idempotency.save(claim, fingerprint, status, body.toString(), { 'content-type': contentType, ...result.headers })
  }

  #execute (fingerprint: string): Result {
    const { route, ctx } = { route: this.#route, ctx: this.#ctx }
    // What this thread committed since the last answer (a turn of the hot journal, after its bids were answered) is
    // no request's to wait for: this one waits only for what its own handler records.
    this.#deps.store.changes?.takeCommitted()
    if (route.prepare !== undefined) ctx.prepared = route.prepare(ctx)
    const claim = this.#claim
    if (!isMutating(ctx.method) || (route.journaled === true && claim === undefined && !ctx.dryRun)) return route.handler(ctx)
    try {
      return this.#deps.store.write(() => {
        const result = route.handler(ctx)
        if (ctx.dryRun) throw new Rollback(result)
        // A held answer is recorded once it settles (#hold), in a transaction of its own.
        if (claim !== undefined && result.kind !== 'held') this.#save(claim, fingerprint, result)
        return result
      })
    } catch (err) {
      if (err instanceof Rollback) return err.result
      // A handler's own 4xx is part of the key's outcome and is replayed too; 5xx, and an error that says when to
      // retry (429, 409 spot_in_progress), may be retried.
      if (claim !== undefined && err instanceof ApiError && err.status < 500 && err.extras.retry_after_seconds === undefined) {
        const body = this.#errorBody(err)
        this.#deps.store.write(() => this.#deps.idempotency.save(claim, fingerprint, err.status, body, { 'content-type': 'application/json', ...err.headers }))
      }
      throw err
    }
  }

  #render (result: Written): { status: number, contentType: string, body: string | Buffer } {
    if (this.#ctx.dryRun && result.kind === 'raw') {
      const text = result.body.toString()
      const data = text === '' ? null : result.contentType.startsWith('application/json') ? JSON.parse(text) as unknown : text
      return { status: 200, contentType: 'application/json', body: JSON.stringify({ dry_run: true, data, warnings: this.#warnings }) }
    }
    if (result.kind === 'raw') return { status: result.status, contentType: result.contentType, body: result.body }
    if (this.#ctx.dryRun) return { status: 200, contentType: 'application/json', body: JSON.stringify({ dry_run: true, data: result.data, warnings: this.#warnings }) }
    const data = result.data instanceof RawJson ? result.data.json : JSON.stringify(result.data)
    // What the service decided for the caller (defaults it filled in, a targeting that matches nothing yet).
    const warnings = this.#warnings.length > 0 ? `,"warnings":${JSON.stringify(this.#warnings)}` : ''
    return { status: result.status, contentType: 'application/json', body: data === undefined ? `{"success":true${warnings}}` : `{"success":true,"data":${data}${warnings}}` }
  }

  #reply (result: Written): void {
    const { status, contentType, body } = this.#render(result)
    this.#send(status, contentType, body, result.headers)
  }

  #errorBody (err: ApiError): string {
    return this.#route.envelope === 'nested'
      ? nestedError(err, this.#ctx.requestId, this.#deps.config.baseUrl)
      : flatError(err, this.#ctx.requestId)
  }

  /**
   * Renders any failure; close is set when the rest of the body was not read. Nothing a request does may end the
   * process: should rendering the failure fail too, the connection is closed and the service goes on serving.
   */
  #fail (err: unknown, close: boolean): void {
    try {
      this.#renderFailure(err, close)
    } catch (fatal) {
      this.#deps.log.error('could not answer a failed request', { request_id: this.#ctx.requestId, error: fatal instanceof Error ? fatal.stack : String(fatal) })
      this.#finish(500)
      try {
        this.#res.close()
      } catch {
        // uWS had already closed or answered it: there is nothing left to do for this request.
      }
    }
  }

  #renderFailure (err: unknown, close: boolean): void {
    let apiError: ApiError
    if (err instanceof ApiError) {
      apiError = err
    } else {
      // No stack trace leaves the process; the log has it, under the request id.
      this.#deps.log.error('unhandled error', { request_id: this.#ctx.requestId, route: `${this.#route.method.toUpperCase()} ${this.#route.path}`, error: err instanceof Error ? err.stack : String(err) })
      apiError = new ApiError('internal_error', 'Internal error; quote request_id to support.')
    }
    const mustClose = close || (apiError.code === 'payload_too_large') || apiError.code === 'service_unavailable'
    const headers = apiError.headers
    this.#send(apiError.status, 'application/json', this.#errorBody(apiError), headers, mustClose && (this.#route.body !== undefined || this.#route.rawBody === true))
  }

  #send (status: number, contentType: string, body: string | Buffer, headers: Record<string, string> | undefined, close = false): void {
    if (this.#aborted || this.#done) return
    const res = this.#res
    const rate = this.#rate
    const cache = this.#route.cacheSeconds
    res.cork(() => {
      res.writeStatus(statusLine(status))
      res.writeHeader('Content-Type', contentType)
      res.writeHeader('X-Request-Id', this.#ctx.requestId)
      if (rate !== undefined) {
        res.writeHeader('RateLimit-Limit', String(rate.limit))
        res.writeHeader('RateLimit-Remaining', String(rate.remaining))
        res.writeHeader('RateLimit-Reset', String(rate.resetSeconds))
      }
      res.writeHeader('Cache-Control', cache !== undefined && status < 400 ? `public, max-age=${cache}` : 'no-store')
      if (headers !== undefined) for (const name in headers) if (name !== 'content-type') res.writeHeader(name, headers[name]!)
      if (this.#head) res.endWithoutBody(Buffer.byteLength(body), close)
      else res.end(body, close)
    })
    this.#finish(status)
  }

  #finish (status: number): void {
    if (this.#done) return
    this.#done = true
    const { metrics, lifecycle, idempotency } = this.#deps
    if (this.#claim !== undefined) idempotency.release(this.#claim)
    this.#releaseHeld()
    this.#series.observe(status, (performance.now() - this.#start) / 1000)
    metrics.inFlight--
    if (--lifecycle.inFlight === 0 && lifecycle.onIdle !== undefined) lifecycle.onIdle()
  }
}
