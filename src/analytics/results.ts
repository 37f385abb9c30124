import type { Clock } from '../clock.js'
import type { Logger } from '../log.js'

/** What a report route can answer now. */
export type Answer<T> =
  | { state: 'ready', data: T, computedAt: number, stale: boolean }
  | { state: 'pending' }
  | { state: 'failed', error: string }

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
 * Report answers by query: ClickHouse is asked off the request path and routes answer from here (handlers cannot
 * await: docs/architecture.md). A fresh answer is reused for ttlMs (the spec's 5-minute funnel cache and market
 * refresh); an expired one is served, marked stale, while it is computed again; an unknown query answers pending
 * and starts computing.
 */
export class ResultCache {
  readonly #clock: Clock
  readonly #log: Logger
  readonly #ttlMs: number
  readonly #entries = new Map<string, Entry>()

  constructor (clock: Clock, log: Logger, ttlMs: number) {
    this.#clock = clock
    this.#log = log
    this.#ttlMs = ttlMs
  }

  get ttlMs (): number {
    return this.#ttlMs
  }

  /** The answer for key, starting compute when there is none or it expired. */
  get<T> (key: string, compute: () => Promise<T>): Answer<T> {
    const now = this.#clock.now()
    let e = this.#entries.get(key)
    if (e === undefined) {
      if (this.#entries.size >= MAX_ENTRIES) this.#entries.delete(this.#entries.keys().next().value!)
      e = {}
      this.#entries.set(key, e)
    }
    const fresh = e.computedAt !== undefined && now - e.computedAt < this.#ttlMs
    const failing = e.failedAt !== undefined && now - e.failedAt < FAILURE_MS
    if (!fresh && e.computing === undefined && !failing) this.#start(key, e, compute)
    if (e.computedAt !== undefined) return { state: 'ready', data: e.data as T, computedAt: e.computedAt, stale: !fresh }
    if (failing && e.computing === undefined) return { state: 'failed', error: e.error ?? 'analytics unavailable' }
    return { state: 'pending' }
  }

  #start<T> (key: string, e: Entry, compute: () => Promise<T>): void {
    e.computing = compute().then((data) => {
      e.data = data
      e.computedAt = this.#clock.now()
      delete e.error
      delete e.failedAt
    }, (err: unknown) => {
      e.error = err instanceof Error ? err.message : String(err)
      e.failedAt = this.#clock.now()
      this.#log.warn('report query failed', { key, error: e.error })
    }).finally(() => { delete e.computing })
  }

  /** Resolves when every query started so far has finished (tests). */
  async settled (): Promise<void> {
    await Promise.all([...this.#entries.values()].map((e) => e.computing))
  }
}
