import type { Clock } from '../clock.js'
import type { Logger } from '../log.js'

/** What a report route can answer now. */
export type Answer<T> =
  | { state: 'ready', data: T, computedAt: number, stale: boolean }
  | { state: 'pending' }
  | { state: 'failed', error: string }

/** How a computation ended, as one thread hands it to the others. */
export type Outcome = { data: unknown, computedAt: number } | { error: string, failedAt: number }

interface Entry {
  data?: unknown
  computedAt?: number
  computing?: Promise<void>
  error?: string
  failedAt?: number
}

const MAX_ENTRIES = 10_000
/** A failed query is not retried for this long, so a down ClickHouse is not asked once per request. */
const FAILURE_MS = 5_000

/**
 * Report answers by query: ClickHouse is asked off the request path, and a route either answers from here at once or
 * holds its response on wait() (docs/architecture.md, "Which routes wait"). A fresh answer is reused for ttlMs (the
 * spec's 5-minute funnel cache and market refresh); an expired one is served, marked stale, while it is computed
 * again; an unknown query starts computing and answers pending.
 */
export class ResultCache {
  readonly #clock: Clock
  readonly #log: Logger
  readonly #ttlMs: number
  readonly #waitMs: number
  readonly #entries = new Map<string, Entry>()
  readonly #share: ((key: string, outcome: Outcome) => void) | undefined

  /**
   * waitMs: how long wait() holds for a computation before it answers pending (REPORT_WAIT_MS). share: hands each
   * computed answer, and each failure, to the other hot threads' caches (received), so that a client's next request
   * finds it whichever thread it reaches: a failure there too answers unavailable instead of asking ClickHouse again.
   */
  constructor (clock: Clock, log: Logger, ttlMs: number, waitMs: number, share?: (key: string, outcome: Outcome) => void) {
    this.#clock = clock
    this.#log = log
    this.#ttlMs = ttlMs
    this.#waitMs = waitMs
    this.#share = share
  }

  /** How another thread's computation ended; an answer is kept unless this thread holds a newer one. */
  received (key: string, outcome: Outcome): void {
    const e = this.#entry(key)
    if ('error' in outcome) {
      if (e.failedAt === undefined || e.failedAt < outcome.failedAt) this.#failed(e, outcome.error, outcome.failedAt)
      return
    }
    if (e.computedAt !== undefined && e.computedAt >= outcome.computedAt) return
    this.#computed(e, outcome.data, outcome.computedAt)
  }

  get ttlMs (): number {
    return this.#ttlMs
  }

  /** The answer for key now, starting compute when there is none or it expired. */
  get<T> (key: string, compute: () => Promise<T>): Answer<T> {
    const e = this.#entry(key)
    const now = this.#clock.now()
    const fresh = e.computedAt !== undefined && now - e.computedAt < this.#ttlMs
    const failing = e.failedAt !== undefined && now - e.failedAt < FAILURE_MS
    if (!fresh && e.computing === undefined && !failing) this.#start(key, e, compute)
    return this.#answerOf<T>(e)
  }

  /**
   * The answer for key once it is known: at once when there is one, else when its computation settles (pending past
   * waitMs). For callers that answer asynchronously anyway (the MCP endpoint), where get() and wait() are one step.
   */
  async settle<T> (key: string, compute: () => Promise<T>): Promise<Answer<T>> {
    const now = this.get(key, compute)
    return now.state === 'pending' ? await this.wait<T>(key) : now
  }

  /** The entry of key, made (the oldest given up beyond MAX_ENTRIES) when there is none. */
  #entry (key: string): Entry {
    let e = this.#entries.get(key)
    if (e === undefined) {
      if (this.#entries.size >= MAX_ENTRIES) this.#entries.delete(this.#entries.keys().next().value!)
      e = {}
      this.#entries.set(key, e)
    }
    return e
  }

  /** The answer for key once its computation settles, or pending when it takes longer than waitMs. */
  async wait<T> (key: string): Promise<Answer<T>> {
    const e = this.#entries.get(key)
    if (e === undefined) return { state: 'pending' }
    if (e.computing !== undefined && this.#waitMs > 0) {
      let timer: NodeJS.Timeout | undefined
      await Promise.race([e.computing, new Promise((resolve) => { timer = setTimeout(resolve, this.#waitMs) })])
      clearTimeout(timer)
    }
    return this.#answerOf<T>(e)
  }

  #answerOf<T> (e: Entry): Answer<T> {
    const now = this.#clock.now()
    if (e.computedAt !== undefined) return { state: 'ready', data: e.data as T, computedAt: e.computedAt, stale: now - e.computedAt >= this.#ttlMs }
    if (e.failedAt !== undefined && e.computing === undefined) return { state: 'failed', error: e.error ?? 'analytics unavailable' }
    return { state: 'pending' }
  }

  #start<T> (key: string, e: Entry, compute: () => Promise<T>): void {
    e.computing = compute().then((data) => {
      const computedAt = this.#clock.now()
      this.#computed(e, data, computedAt)
      this.#share?.(key, { data, computedAt })
    }, (err: unknown) => {
      const error = err instanceof Error ? err.message : String(err)
      const failedAt = this.#clock.now()
      this.#failed(e, error, failedAt)
      this.#log.warn('report query failed', { key, error })
      this.#share?.(key, { error, failedAt })
    }).finally(() => { delete e.computing })
  }

  #computed (e: Entry, data: unknown, computedAt: number): void {
    e.data = data
    e.computedAt = computedAt
    delete e.error
    delete e.failedAt
  }

  /** A failure keeps the last answer, served stale, and holds off asking again for FAILURE_MS. */
  #failed (e: Entry, error: string, failedAt: number): void {
    e.error = error
    e.failedAt = failedAt
  }

  /** Resolves when every query started so far has finished (tests). */
  async settled (): Promise<void> {
    await Promise.all([...this.#entries.values()].map((e) => e.computing))
  }
}
