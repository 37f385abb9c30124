import http from 'node:http'
import https from 'node:https'
import type { Clock } from '../clock.js'
import type { Metrics } from '../http/metrics.js'
import type { Logger } from '../log.js'
import { guardedLookup } from '../net/guarded-lookup.js'
import { callbackUrlProblem } from '../net/url-guard.js'
import type { NoticeRecord } from '../store/records.js'
import type { Store } from '../store/store.js'
import type { LegacySigner } from './legacy.js'
import type { Notices } from './notices.js'

/** Seconds before each retry; a notice is dropped after the last. OpenRTB notices are worthless after minutes. */
const RETRIES: Record<NoticeRecord['kind'], number[]> = {
  nurl: [1, 4, 15, 60, 300],
  lurl: [1, 4, 15, 60, 300],
  burl: [1, 4, 15, 60, 300, 1800],
  legacy: [1, 4, 15, 60, 300, 1800, 7200]
}
const MAX_IN_FLIGHT = 64
const POLL_MS = 250

export interface SenderOptions {
  timeoutMs: number
  /** Test escape hatch: loopback and private receivers. */
  allowPrivate: boolean
}

type Outcome = { delivered: true, status: number } | { delivered: false, retry: boolean, reason: string }

/**
 * Delivers queued notices: OpenRTB nurl, lurl and burl as GET (any status below 400 counts, redirects are not
 * followed) and legacy notifications as signed POSTs (2xx counts). Only public addresses are reached, checked on the
 * literal host and again on every resolved address (DNS rebinding). Failures are retried on the RETRIES schedule;
 * a 4xx other than 408 and 429 is final. Nothing here blocks a request: the queue is read on a timer and whenever a
 * transaction enqueues.
 */
export class NoticeSender {
  readonly #store: Store
  readonly #notices: Notices
  readonly #clock: Clock
  readonly #log: Logger
  readonly #metrics: Metrics
  readonly #signer: LegacySigner
  readonly #options: SenderOptions
  readonly #inFlight = new Map<string, Promise<void>>()
  readonly #agents: { http: http.Agent, https: https.Agent }
  #timer: NodeJS.Timeout | undefined
  #scheduled = false
  #closed = false

  constructor (deps: { store: Store, notices: Notices, clock: Clock, log: Logger, metrics: Metrics, signer: LegacySigner }, options: SenderOptions) {
    this.#store = deps.store
    this.#notices = deps.notices
    this.#clock = deps.clock
    this.#log = deps.log
    this.#metrics = deps.metrics
    this.#signer = deps.signer
    this.#options = options
    const lookup = guardedLookup(options.allowPrivate)
    this.#agents = {
      http: new http.Agent({ keepAlive: true, maxSockets: 16, lookup } as http.AgentOptions),
      https: new https.Agent({ keepAlive: true, maxSockets: 16, lookup } as https.AgentOptions)
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
  kick (): void {
    if (this.#scheduled || this.#closed) return
    this.#scheduled = true
    setImmediate(() => {
      this.#scheduled = false
      this.#pass()
    })
  }

  #pass (): void {
    if (this.#closed) return
    const room = MAX_IN_FLIGHT - this.#inFlight.size
    if (room <= 0) return
    for (const { key, notice } of this.#notices.due(this.#clock.now(), room, new Set(this.#inFlight.keys()))) {
      const job = this.#deliver(notice).then((outcome) => this.#settle(key, notice, outcome), (err: unknown) => this.#settle(key, notice, { delivered: false, retry: true, reason: String(err) }))
        .finally(() => { this.#inFlight.delete(notice.id); if (!this.#closed) this.kick() })
      this.#inFlight.set(notice.id, job)
    }
  }

  /** Resolves once nothing due is queued or in flight (tests and shutdown). */
  async idle (): Promise<void> {
    for (;;) {
      this.#pass()
      if (this.#inFlight.size === 0 && this.#notices.due(this.#clock.now(), 1, new Set()).length === 0) return
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
    const schemes = notice.kind === 'legacy' ? ['https:'] : ['http:', 'https:']
    const problem = callbackUrlProblem(notice.url, this.#options.allowPrivate, schemes)
    if (problem !== undefined) return Promise.resolve({ delivered: false, retry: false, reason: `the URL ${problem}` })
    let headers: Record<string, string> = { 'user-agent': 'oohbid-notifier/1.0' }
    if (notice.kind === 'legacy') {
      const signed = this.#signer.headers(notice, this.#clock.now())
      if (signed === undefined) return Promise.resolve({ delivered: false, retry: false, reason: 'the seat has no live API key to sign with' })
      headers = { ...headers, ...signed, 'content-length': String(Buffer.byteLength(notice.body!)) }
    }
    const url = new URL(notice.url)
    const client = url.protocol === 'https:' ? https : http
    const agent = url.protocol === 'https:' ? this.#agents.https : this.#agents.http
    return new Promise((resolve) => {
      const req = client.request(url, { method: notice.kind === 'legacy' ? 'POST' : 'GET', headers, agent, timeout: this.#options.timeoutMs }, (res) => {
        res.resume()
        const status = res.statusCode ?? 0
        const delivered = notice.kind === 'legacy' ? status >= 200 && status < 300 : status >= 200 && status < 400
        if (delivered) return resolve({ delivered: true, status })
        resolve({ delivered: false, retry: status >= 500 || status === 408 || status === 429, reason: `HTTP ${status}` })
      })
      req.on('timeout', () => req.destroy(new Error(`no answer within ${this.#options.timeoutMs} ms`)))
      req.on('error', (err) => resolve({ delivered: false, retry: true, reason: err.message }))
      req.end(notice.kind === 'legacy' ? notice.body : undefined)
    })
  }

  #settle (key: [number, string], notice: NoticeRecord, outcome: Outcome): void {
    const schedule = RETRIES[notice.kind]
    const retryIn = !outcome.delivered && outcome.retry ? schedule[notice.attempts] : undefined
    this.#store.write(() => {
      this.#store.notices.removeSync(key)
      if (retryIn !== undefined) {
        const due = this.#clock.now() + retryIn * 1000
        this.#store.notices.putSync([due, notice.id], { ...notice, attempts: notice.attempts + 1 })
      }
    })
    const result = outcome.delivered ? 'delivered' : retryIn !== undefined ? 'retrying' : 'dropped'
    this.#metrics.inc('oohbid_notices_total', 'Outbound notice attempts by kind and result.', `kind="${notice.kind}",result="${result}"`)
    if (result === 'dropped') this.#log.warn('notice dropped', { id: notice.id, kind: notice.kind, seat_id: notice.seat_id, attempts: notice.attempts + 1, reason: outcome.delivered ? '' : outcome.reason })
  }
}
