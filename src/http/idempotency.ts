import { createHash } from 'node:crypto'
import type { Clock } from '../clock.js'
import { ApiError } from '../errors.js'
import type { IdempotencyRecord } from '../store/records.js'
import type { Store } from '../store/store.js'

/** Keys live 24 hours and may be reused after that (spec, Idempotency and dry run). */
export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000
const MAX_KEY_LENGTH = 256

/**
 * Idempotency-Key handling, after the IETF httpapi draft and Stripe: the first response to a key is stored in the same
 * transaction as the change it made and replayed for 24 hours; the same key with another method, path or body is 422
 * idempotency_key_mismatch; a key whose first request is still arriving is 409 idempotency_key_in_use. Keys are scoped
 * to the API key (the client address where a route takes no key) and compared case-sensitively.
 */
export class Idempotency {
  readonly #store: Store
  readonly #clock: Clock
  readonly #inFlight = new Set<string>()

  constructor (store: Store, clock: Clock) {
    this.#store = store
    this.#clock = clock
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
    if (this.#inFlight.has(id)) throw new ApiError('idempotency_key_in_use', 'A request with this Idempotency-Key is still in progress; retry when it has finished.')
    this.#inFlight.add(id)
    return id
  }

  /** Releases a claimed key. */
  release (id: string): void {
    this.#inFlight.delete(id)
  }

  /** The stored response for a claimed key if it is still valid; throws 422 when the request differs. */
  replay (id: string, fingerprint: string): IdempotencyRecord | undefined {
    const record = this.#store.idempotency.get(id)
    if (record === undefined || record.expires_at <= this.#clock.now()) return undefined
    if (record.fingerprint !== fingerprint) {
      throw new ApiError('idempotency_key_mismatch', 'This Idempotency-Key was used with a different request in the last 24 hours; use a new key.')
    }
    return record
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
