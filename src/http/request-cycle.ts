import { performance } from 'node:perf_hooks'
import type { HttpRequest, HttpResponse } from 'uWebSockets.js'
import type { Authenticator } from '../auth/authenticate.js'
import { presentedKey } from '../auth/keys.js'
import type { Clock } from '../clock.js'
import type { ResolvedConfig } from '../config.js'
import { ApiError } from '../errors.js'
import type { Logger } from '../log.js'
import type { Store } from '../store/store.js'
import { parseBody, readBody, takesBody } from './body.js'
import type { Coordination, ForwardedRequest, RequestCoordination } from './coordination.js'
import { statusLine } from './envelope.js'
import { Idempotency } from './idempotency.js'
import { Admission, callerOf } from './admission.js'
import { execute, rehearse, saveOutcome, type Execution } from './execution.js'
import type { Metrics, RouteSeries } from './metrics.js'
import { type RateLimiter } from './rate-limit.js'
import { errorBody, renderResult, type Written } from './render.js'
import { arrived } from './request-context.js'
import { type Ctx, type Result, type RouteDef } from './route.js'

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
  /** What a request needs from the other nodes that share its state (src/http/coordination.ts). */
  coordination: Coordination
}

/** In-flight accounting for graceful shutdown. */
export interface Lifecycle {
  draining: boolean
  inFlight: number
  onIdle: (() => void) | undefined
}

/** A body not asked for yet (RequestCycle.#admitAgainAfter). */
const NOT_READ = Symbol('not read')

/** An answer whose decision did not count (Result's counts): nothing it decided stands, so the client asks again. */
const notCounted = (): ApiError => new ApiError('service_unavailable', 'This decision could not be confirmed by the cluster (its screen may be moving to another node); ask again.', { retry_after_seconds: 1 }, { 'Retry-After': '1' })

/**
 * One request from arrival to the last byte: auth, rate limit, body, validation, idempotency, the handler (inside a
 * write transaction on mutating routes) and the reply. Every reply is written inside a uWS callback (the route callback
 * or the last onData), corked, so pipelined requests are answered in order; only computed routes hold theirs (#hold),
 * and only a step of the coordination seam that has something to wait for (another node) answers later.
 */
export class RequestCycle {
  readonly #res: HttpResponse
  readonly #route: RouteDef
  readonly #deps: HttpDeps
  readonly #ctx: Ctx
  readonly #series: RouteSeries
  readonly #coord: RequestCoordination
  readonly #start = performance.now()
  readonly #warnings: string[] = []
  readonly #admission: Admission
  #aborted = false
  #done = false
  /** Whether a replay of its Idempotency-Key's outcome has waited for this node's changes to be acknowledged. */
  #replayWaited = false
  /** A body read while the request waited to be admitted again: NOT_READ, null while arriving, undefined for none. */
  #waitedBody: Buffer | undefined | null | typeof NOT_READ = NOT_READ
  readonly #head: boolean

  constructor (res: HttpResponse, req: HttpRequest, route: RouteDef, deps: HttpDeps, paramNames: string[], series: RouteSeries) {
    this.#res = res
    this.#route = route
    this.#deps = deps
    this.#series = series
    const { ctx, rawParams, head } = arrived(res, req, paramNames.length, deps.clock, deps.config.trustProxy, this.#warnings)
    this.#ctx = ctx
    this.#head = head
    this.#coord = deps.coordination.begin(ctx.requestId)
    this.#admission = new Admission(deps, route, ctx, this.#coord, paramNames, rawParams)
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
      this.#admission.admit()
      if (!takesBody(this.#route)) return this.#complete(undefined)
      this.#readBody((raw) => this.#complete(raw))
    } catch (err) {
      this.#refused(err)
    }
  }

  /** An admission that did not pass: admitted again when the coordination has something to wait for, else answered. */
  #refused (err: unknown): void {
    const again = this.#coord.again(err, this.#route.auth === 'admin' ? undefined : presentedKey(this.#ctx.headers))
    if (again !== undefined) return this.#admitAgainAfter(again)
    this.#fail(err, false)
  }

  /** Admits the request again once wait settles, reading the body meanwhile. */
  #admitAgainAfter (wait: Promise<unknown>): void {
    let settled = false
    const go = (): void => {
      const body = this.#waitedBody
      if (!settled || body === null || body === NOT_READ || this.#aborted || this.#done) return
      try {
        this.#admission.admit()
        this.#complete(body)
      } catch (err) {
        this.#refused(err)
      }
    }
    try {
      // A copy: uWS frees the last chunk's memory when its callback returns, and this body waits past it.
      if (this.#waitedBody === NOT_READ) {
        if (!takesBody(this.#route)) this.#waitedBody = undefined
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

  #readBody (then: (raw: Buffer) => void): void {
    readBody(this.#res, this.#route, this.#ctx.headers, this.#deps.config.maxBodyBytes, () => this.#done, then, (err) => this.#fail(err, true))
  }

  /** Parses, validates, replays or runs the handler (once the coordination holds what it must), and replies. */
  #complete (raw: Buffer | undefined): void {
    const { route, ctx } = { route: this.#route, ctx: this.#ctx }
    // The body may have arrived over several turns: read what other threads committed meanwhile.
    if (raw !== undefined) this.#deps.store.refresh()
    try {
      const screen = route.screen
      const elsewhere = screen === undefined ? undefined : this.#coord.decidedElsewhere(() => screen(ctx), () => this.#forwarded(raw), () => route.decidedBy?.(ctx))
      if (elsewhere !== undefined) {
        elsewhere.then((answer) => this.#send(answer.status, answer.contentType, answer.body, answer.headers)).catch((err: unknown) => { this.#fail(err, false) })
        return
      }
      parseBody(route, ctx, raw)
      const claim = this.#admission.claim
      const fingerprint = claim !== undefined ? this.#fingerprint(raw) : ''
      if (claim !== undefined) {
        const stored = this.#deps.idempotency.replay(claim, fingerprint)
        if (stored !== undefined) {
          // The first answer may have been a 503 whose write has not reached the other nodes yet: the replay waits for
          // all this node recorded, and reads the outcome again, which is gone if the cluster refused that write (its
          // record's lock passed to another request first): the request then runs again.
          const wait = this.#replayWaited ? undefined : this.#coord.acknowledged(this.#deps.store.changes?.recorded ?? 0)
          if (wait !== undefined) {
            this.#replayWaited = true
            return this.#completeAfter(raw, wait)
          }
          return this.#send(stored.status, stored.headers['content-type'] ?? 'application/json', stored.body, { ...stored.headers, 'Idempotent-Replayed': 'true' })
        }
      }
      const declares = route.declares
      const wait = this.#coord.before({
        claim,
        exclusive: () => ctx.dryRun ? undefined : route.exclusive?.(ctx),
        unique: () => ctx.dryRun ? undefined : route.unique?.(ctx),
        owner: () => `${callerOf(ctx)} ${claim !== undefined ? fingerprint : this.#fingerprint(raw)}`,
        books: this.#books(),
        rehearse: () => rehearse(this.#execution(fingerprint)),
        declared: declares === undefined ? undefined : () => declares(ctx),
        namesUnknown: () => route.namesUnknown?.(ctx) ?? false
      })
      if (wait !== undefined) return this.#completeAfter(raw, wait)
      let result: Result
      try {
        result = this.#coord.executing(() => execute(this.#execution(fingerprint)))
      } catch (err) {
        // What the request took for its write is given back before the answer: a client that corrects its request
        // and sends it again finds it free.
        const undo = this.#coord.failed()
        if (undo === undefined) throw err
        return this.#after(undo, () => this.#fail(err, false))
      }
      this.#answer(result, fingerprint)
    } catch (err) {
      this.#fail(err, false)
    }
  }

  /** The request as another node is sent it; the body copied, since uWS frees it when its callback returns. */
  #forwarded (raw: Buffer | undefined): ForwardedRequest {
    const ctx = this.#ctx
    return { method: ctx.method, path: ctx.path, query: ctx.query.toString(), headers: ctx.headers, ip: ctx.ip, body: raw === undefined ? undefined : Buffer.from(raw) }
  }

  /** Whether the handler may book screen time (RouteDef.books), and whether as a dry run. */
  #books (): 'yes' | 'dry' | undefined {
    const { route, ctx } = { route: this.#route, ctx: this.#ctx }
    const books = typeof route.books === 'function' ? route.books(ctx) : route.books
    if (books === undefined || books === false) return undefined
    return ctx.dryRun || books === 'dry' ? 'dry' : 'yes'
  }

  #fingerprint (raw: Buffer | undefined): string {
    const ctx = this.#ctx
    return Idempotency.fingerprint(ctx.method, ctx.path, ctx.query.toString(), raw?.toString('utf8') ?? '')
  }

  /**
   * Completes the request again once a coordination step settles, reading what other nodes' rows reached this one
   * meanwhile. The body is copied: uWS frees the last chunk's memory when its callback returns.
   */
  #completeAfter (raw: Buffer | undefined, wait: Promise<void>): void {
    const body = raw === undefined ? undefined : Buffer.from(raw)
    wait.then(() => {
      if (this.#aborted) return
      this.#deps.store.refresh()
      this.#complete(body)
    }).catch((err: unknown) => { this.#fail(err, false) })
  }

  /** Runs then now, or once wait settles; a wait that fails is answered instead. */
  #after (wait: Promise<void> | undefined, then: () => void): void {
    if (wait === undefined) return then()
    wait.then(then).catch((err: unknown) => { this.#fail(err, false) })
  }

  /**
   * Replies, holds, or first waits for what the handler's transaction (or its journal's turn) recorded to be
   * acknowledged, and then for whether the answer counts (Result's counts).
   */
  #answer (result: Result, fingerprint: string): void {
    if (result.kind === 'held') return this.#hold(result.answer, fingerprint)
    const seq = this.#deps.store.changes?.takeCommitted() ?? 0
    // A journaled handler may also have committed others' entries (a spot's wait for other threads flushes this
    // thread's journal): its own entry still waits for its turn, and both for the engine.
    const committed = seq > 0 ? this.#coord.acknowledged(seq) : undefined
    const turn = this.#route.journaled === true ? this.#coord.turn() : undefined
    const wait = committed === undefined ? turn : turn === undefined ? committed : Promise.all([committed, turn]).then(() => {})
    const counts = result.counts
    if (counts === undefined) return this.#after(wait, () => this.#reply(result))
    this.#after(wait, () => this.#after(counts().then((counted) => { if (!counted) throw notCounted() }), () => {
      // Its Idempotency-Key's outcome is this answer only now that it counts: refused, a retry decides again.
      const claim = this.#admission.claim
      if (claim !== undefined && !this.#ctx.dryRun) this.#deps.store.write(() => saveOutcome(this.#execution(fingerprint), claim, result))
      this.#reply(result)
    }))
  }

  /**
   * Keeps the response open until a computed, gathered, agent or proving route's answer settles (onAborted was registered in run()),
   * then writes it corked. Any other route must not hold: its clients may pipeline.
   */
  #hold (answer: Promise<Result>, fingerprint: string): void {
    const { route, ctx } = { route: this.#route, ctx: this.#ctx }
    if (route.computed !== true && route.gathered !== true && route.agent !== true && route.proves !== true) {
      // The answer is refused, but it still settles: its failure must not go unhandled and end the process.
      answer.catch(() => {})
      throw new Error(`${route.method.toUpperCase()} ${route.path} held its response but is neither computed, gathered, an agent endpoint nor one that proves plays`)
    }
    // What the answer records commits on later turns, among other requests' commits: it is acknowledged once
    // everything this node recorded until the answer settled is, when the answer recorded anything.
    const before = this.#deps.store.changes?.recorded ?? 0
    answer.then((result) => {
      if (this.#aborted) return
      if (result.kind === 'held') throw new Error('a held answer settled into another held answer')
      const claim = this.#admission.claim
      if (claim !== undefined && !ctx.dryRun) this.#coord.within(() => this.#deps.store.write(() => saveOutcome(this.#execution(fingerprint), claim, result)))
      const recorded = this.#deps.store.changes?.recorded ?? 0
      this.#after(recorded > before ? this.#coord.acknowledged(recorded) : undefined, () => this.#reply(result))
    }).catch((err: unknown) => { this.#fail(err, false) })
  }

  #execution (fingerprint: string): Execution {
    const { store, idempotency } = this.#deps
    return { store, idempotency, route: this.#route, ctx: this.#ctx, claim: this.#admission.claim, fingerprint, warnings: this.#warnings, errorBody: (err) => this.#errorBody(err) }
  }

  #reply (result: Written): void {
    const { status, contentType, body } = renderResult(result, this.#ctx.dryRun, this.#warnings)
    this.#send(status, contentType, body, result.headers)
  }

  #errorBody (err: ApiError): string {
    return errorBody(this.#route, err, this.#ctx.requestId, this.#deps.config.baseUrl)
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
    this.#send(apiError.status, 'application/json', this.#errorBody(apiError), apiError.headers, mustClose && takesBody(this.#route))
  }

  #send (status: number, contentType: string, body: string | Buffer, headers: Record<string, string> | undefined, close = false): void {
    if (this.#aborted || this.#done) return
    const res = this.#res
    const rate = this.#admission.rate
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
    if (this.#admission.claim !== undefined) idempotency.release(this.#admission.claim)
    this.#coord.end()
    this.#series.observe(status, (performance.now() - this.#start) / 1000)
    metrics.inFlight--
    if (--lifecycle.inFlight === 0 && lifecycle.onIdle !== undefined) lifecycle.onIdle()
  }
}
