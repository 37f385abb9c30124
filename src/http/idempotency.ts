import { createHash } from 'node:crypto'
import type { Clock } from '../clock.js'
import { ApiError } from '../errors.js'
import type { IdempotencyRecord } from './records.js'
import type { Store } from '../store/store.js'
import { SharedTable } from './shared-table.js'

/** Keys live 24 hours and may be reused after that (spec, Idempotency and dry run). */
export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000
const MAX_KEY_LENGTH = 256
/** Keys in flight at once; a key is in flight only while its first request is being answered. */
const IN_FLIGHT_SLOTS = 1 << 14
/** A claim older than this belongs to a request that can no longer finish (its thread died): the key is free again. */
const CLAIM_TTL_MS = 10 * 60_000

const released = (now: number) => (v: Float64Array, b: number) => v[b] === 0 || now - v[b]! > CLAIM_TTL_MS

/**
 * Idempotency-Key handling, after the IETF httpapi draft and Stripe: the first response to a key is stored in the same
 * transaction as the change it made and replayed for 24 hours; the same key with another method, path or body is 422
 * idempotency_key_mismatch; a key whose first request is still arriving is 409 idempotency_key_in_use. Keys are scoped
 * to the API key (the client address where a route takes no key) and compared case-sensitively.
 */
export class Idempotency {
  readonly #store: Store
  readonly #clock: Clock
  /** Keys whose first request is being answered, with when it was claimed, in memory shared by the hot threads. */
  readonly #inFlight: SharedTable

  /** buffer: another thread's keys in flight, so that a retry reaching another thread also gets 409. */
  constructor (store: Store, clock: Clock, buffer?: SharedArrayBuffer) {
    this.#store = store
    this.#clock = clock
    this.#inFlight = new SharedTable(IN_FLIGHT_SLOTS, 1, buffer)
  }

  /** The memory to hand a hot thread's Idempotency. */
  get buffer (): SharedArrayBuffer {
    return this.#inFlight.buffer
  }

  /** Validates the header value; undefined when absent. */
  static parse (header: string | undefined): string | undefined {
    if (header === undefined) return undefined
    if (header.length === 0 || header.length > MAX_KEY_LENGTH) {
      throw new ApiError('invalid_idempotency_key', `Idempotency-Key must be 1 to ${MAX_KEY_LENGTH} characters.`)
    }
    return header
  }

  /** Claims a key for a request that is arriving; throws 409 when another request holds it. */
  claim (scope: string, key: string): string {
    const id = scope + '\u0000' + key
    // Real time, not the service's clock: the TTL is how long a dead thread's claim outlives it, and tests move the clock.
    const now = Date.now()
    const claimed = this.#inFlight.with(id, released(now), (v, b, fresh) => {
      if (fresh) v[b] = now
      return fresh
    })
    if (!claimed) throw new ApiError('idempotency_key_in_use', 'A request with this Idempotency-Key is still in progress; retry when it has finished.')
    return id
  }

  /** Releases a claimed key. */
  release (id: string): void {
    this.#inFlight.with(id, released(Date.now()), (v, b) => { v[b] = 0 })
  }

  /** The stored response for a claimed key if it is still valid; throws 422 when the request differs. */
  replay (id: string, fingerprint: string): IdempotencyRecord | undefined {
    if (!this.stored(id)) return undefined
    const record = this.#store.idempotency.get(id)!
    if (record.fingerprint !== fingerprint) {
      throw new ApiError('idempotency_key_mismatch', 'This Idempotency-Key was used with a different request in the last 24 hours; use a new key.')
    }
    return record
  }

  /** Whether a claimed key has an outcome stored that a retry would replay. */
  stored (id: string): boolean {
    const record = this.#store.idempotency.get(id)
    return record !== undefined && record.expires_at > this.#clock.now()
  }

  /** Stores the response; call inside the transaction that made the change. */
  save (id: string, fingerprint: string, status: number, body: string, headers: Record<string, string>): void {
    this.#store.idempotency.putSync(id, { fingerprint, status, body, headers, expires_at: this.#clock.now() + IDEMPOTENCY_TTL_MS })
  }

  /** Deletes expired records; runs on a timer. */
  sweep (): number {
    const now = this.#clock.now()
    const expired: string[] = []
    for (const { key, value } of this.#store.idempotency.getRange()) if (value.expires_at <= now) expired.push(key)
    if (expired.length > 0) this.#store.write(() => { for (const k of expired) this.#store.idempotency.removeSync(k) })
    return expired.length
  }

  /** What identifies a request for mismatch detection: method, path, query and raw body. */
  static fingerprint (method: string, path: string, query: string, body: string): string {
    return createHash('sha256').update(`${method} ${path}?${query}\n${body}`).digest('hex')
  }
}
