import http from 'node:http'
import https from 'node:https'
import type { Clock } from '../clock.js'
import type { Metrics } from '../http/metrics.js'
import type { Logger } from '../log.js'
import { guardedLookup } from '../net/guarded-lookup.js'
import { callbackUrlProblem } from '../net/url-guard.js'
import { onNextTurn } from '../next-turn.js'
import type { NoticeRecord } from './records.js'
import type { Store } from '../store/store.js'
import type { NoticeKey, Notices } from './notices.js'

/** The request one attempt makes, or why the notice is given up without trying (canceled). */
export type Prepared = { headers: Record<string, string>, body?: string } | { cancel: string }

/** What one attempt came to, as a kind's `recorded` hook sees it (inside the transaction that records it). */
export interface Attempt {
  at: number
  result: 'delivered' | 'retrying' | 'dropped' | 'canceled'
  /** The answer's status; undefined when there was none (connect error, timeout, refused address). */
  status?: number
  reason?: string
  durationMs: number
  /** retrying: when the next attempt is due. */
  nextAt?: number
}

/** How one kind of notice is sent: method, schemes, what acknowledges, the retry schedule, signing and bookkeeping. */
export interface NoticeKind {
  method: 'GET' | 'POST'
  schemes: readonly string[]
  /** How long one attempt may take, connect to last byte. */
  timeoutMs: number
  /** Seconds before each retry; the notice is given up after the last. */
  retries: readonly number[]
  /** Each wait is spread by up to this fraction either way, so receivers that failed together are not retried together. */
  jitter: number
  /** Whether an answer with this status acknowledges the notice. */
  delivered (status: number): boolean
  /** Whether a 4xx other than 408 and 429 ends the notice at once (the request itself is wrong) instead of being retried. */
  finalOn4xx: boolean
  /** Headers and body of an attempt, built when it is made (signatures carry its time). */
  prepare (notice: NoticeRecord, nowMs: number): Prepared
  /** Runs inside the transaction that records the attempt. */
  recorded? (notice: NoticeRecord, attempt: Attempt): void
}

const MAX_IN_FLIGHT = 64
/** One slow receiver may not hold every connection: the rest of the queue keeps moving. */
const MAX_PER_ORIGIN = 16
const POLL_MS = 250

export interface SenderOptions {
  /** Test escape hatch: loopback and private receivers. */
  allowPrivate: boolean
  /** DNS servers to resolve with instead of the system resolver. */
  dnsServers?: string[]
}

type Outcome = { delivered: true, status: number } | { delivered: false, retry: boolean, reason: string, status?: number, canceled?: true }

/**
 * Delivers queued notices of every kind (src/notify/kinds.ts, src/webhooks/kind.ts). Only public addresses are
 * reached, checked on the literal host and again on every resolved address at connect time (DNS rebinding); redirects
 * are not followed. Failures are retried on the kind's schedule. Nothing here blocks a request: the queue is read on a
 * timer and whenever a transaction enqueues.
 */
export class NoticeSender {
  readonly #store: Store
  readonly #notices: Notices
  readonly #clock: Clock
  readonly #log: Logger
  readonly #metrics: Metrics
  readonly #kinds: Record<NoticeRecord['kind'], NoticeKind>
  readonly #options: SenderOptions
  readonly #inFlight = new Map<string, Promise<void>>()
  readonly #perOrigin = new Map<string, number>()
  readonly #agents: { http: http.Agent, https: https.Agent }
  #timer: NodeJS.Timeout | undefined
  #closed = false
  #turn = 0

  constructor (deps: { store: Store, notices: Notices, clock: Clock, log: Logger, metrics: Metrics, kinds: Record<NoticeRecord['kind'], NoticeKind> }, options: SenderOptions) {
    this.#store = deps.store
    this.#notices = deps.notices
    this.#clock = deps.clock
    this.#log = deps.log
    this.#metrics = deps.metrics
    this.#kinds = deps.kinds
    this.#options = options
    const lookup = guardedLookup(options.allowPrivate, undefined, options.dnsServers)
    this.#agents = {
      http: new http.Agent({ keepAlive: true, maxSockets: MAX_PER_ORIGIN, lookup } as http.AgentOptions),
      https: new https.Agent({ keepAlive: true, maxSockets: MAX_PER_ORIGIN, lookup } as https.AgentOptions)
    }
    deps.notices.onEnqueue(() => this.kick())
  }

  /** Starts polling the queue. */
  start (): void {
    this.#timer = setInterval(() => this.kick(), POLL_MS)
    this.#timer.unref()
    this.kick()
  }

  /** Looks at the queue soon (coalesced: many enqueues in one tick make one pass). */
  readonly kick = onNextTurn(() => this.#pass())

  #pass (): void {
    if (this.#closed) return
    const now = this.#clock.now()
    const skip = new Set(this.#inFlight.keys())
    // Receivers take turns at the head of the pass, so none is always served last.
    const origins = this.#notices.origins(now)
    const first = origins.length > 0 ? this.#turn++ % origins.length : 0
    for (let i = 0; i < origins.length; i++) {
      const room = MAX_IN_FLIGHT - this.#inFlight.size
      if (room <= 0) return
      const origin = origins[(first + i) % origins.length]!
      const free = Math.min(room, MAX_PER_ORIGIN - (this.#perOrigin.get(origin) ?? 0))
      if (free <= 0) continue
      for (const { key, notice } of this.#notices.due(origin, now, free, skip)) this.#start(origin, key, notice)
    }
  }

  #start (origin: string, key: NoticeKey, notice: NoticeRecord): void {
    this.#perOrigin.set(origin, (this.#perOrigin.get(origin) ?? 0) + 1)
    const started = performance.now()
    const job = this.#deliver(notice)
      .catch((err: unknown): Outcome => ({ delivered: false, retry: true, reason: String(err) }))
      .then((outcome) => this.#settle(key, notice, outcome, started))
      .finally(() => {
        this.#inFlight.delete(notice.id)
        const left = (this.#perOrigin.get(origin) ?? 1) - 1
        if (left === 0) this.#perOrigin.delete(origin)
        else this.#perOrigin.set(origin, left)
        if (!this.#closed) this.kick()
      })
    this.#inFlight.set(notice.id, job)
  }

  /** Resolves once nothing due is queued or in flight (tests and shutdown). */
  async idle (): Promise<void> {
    for (;;) {
      this.#pass()
      const now = this.#clock.now()
      if (this.#inFlight.size === 0 && this.#notices.origins(now).every((o) => this.#notices.due(o, now, 1, new Set()).length === 0)) return
      await Promise.all([...this.#inFlight.values()])
      await new Promise((resolve) => setImmediate(resolve))
    }
  }

  /** Stops sending; notices in flight finish (their outcome is recorded), the rest wait in LMDB for the next start. */
  async close (): Promise<void> {
    this.#closed = true
    if (this.#timer !== undefined) clearInterval(this.#timer)
    await Promise.all([...this.#inFlight.values()])
    this.#agents.http.destroy()
    this.#agents.https.destroy()
  }

  #deliver (notice: NoticeRecord): Promise<Outcome> {
    const kind = this.#kinds[notice.kind]
    const problem = callbackUrlProblem(notice.url, this.#options.allowPrivate, kind.schemes)
    if (problem !== undefined) return Promise.resolve({ delivered: false, retry: false, reason: `the URL ${problem}` })
    const prepared = kind.prepare(notice, this.#clock.now())
    if ('cancel' in prepared) return Promise.resolve({ delivered: false, retry: false, reason: prepared.cancel, canceled: true })
    const headers: Record<string, string> = { ...prepared.headers }
    if (prepared.body !== undefined) headers['content-length'] = String(Buffer.byteLength(prepared.body))
    const url = new URL(notice.url)
    const client = url.protocol === 'https:' ? https : http
    const agent = url.protocol === 'https:' ? this.#agents.https : this.#agents.http
    return new Promise((resolve) => {
      const req = client.request(url, { method: kind.method, headers, agent, timeout: kind.timeoutMs }, (res) => {
        res.resume()
        const status = res.statusCode ?? 0
        if (kind.delivered(status)) return resolve({ delivered: true, status })
        const final = kind.finalOn4xx && status >= 400 && status < 500 && status !== 408 && status !== 429
        resolve({ delivered: false, retry: !final, reason: `HTTP ${status}`, status })
      })
      req.on('timeout', () => req.destroy(new Error(`no answer within ${kind.timeoutMs} ms`)))
      req.on('error', (err) => resolve({ delivered: false, retry: true, reason: err.message }))
      req.end(prepared.body)
    })
  }

  #settle (key: NoticeKey, notice: NoticeRecord, outcome: Outcome, started: number): void {
    const kind = this.#kinds[notice.kind]
    const wait = !outcome.delivered && outcome.retry ? kind.retries[notice.attempts] : undefined
    const now = this.#clock.now()
    const nextAt = wait !== undefined ? now + Math.round(wait * 1000 * (1 + kind.jitter * (2 * Math.random() - 1))) : undefined
    const result: Attempt['result'] = outcome.delivered ? 'delivered' : outcome.canceled === true ? 'canceled' : nextAt !== undefined ? 'retrying' : 'dropped'
    const attempt: Attempt = { at: now, result, durationMs: Math.round(performance.now() - started) }
    if (outcome.status !== undefined) attempt.status = outcome.status
    if (!outcome.delivered) attempt.reason = outcome.reason
    if (nextAt !== undefined) attempt.nextAt = nextAt
    this.#store.write(() => {
      if (nextAt !== undefined) this.#notices.reschedule(key, { ...notice, attempts: notice.attempts + 1 }, nextAt)
      else this.#notices.remove(key)
      kind.recorded?.(notice, attempt)
    })
    this.#metrics.inc('oohbid_notices_total', 'Outbound notice attempts by kind and result.', `kind="${notice.kind}",result="${result}"`)
    if (result === 'dropped') this.#log.warn('notice dropped', { id: notice.id, kind: notice.kind, seat_id: notice.seat_id, attempts: notice.attempts + 1, reason: attempt.reason ?? '' })
  }
}
