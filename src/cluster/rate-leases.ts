import type { KV } from 'nats'
import type { Logger } from '../log.js'
import { chunkFor, type RateLimiter, type WindowAsk, type WindowGrant } from '../http/rate-limit.js'

/**
 * How long a node waits for the engine's grant before granting itself one: the engine cannot answer while the
 * bucket's stream elects a leader (4-9 s), and a key's requests must not stop for that long.
 */
export const LOCAL_GRANT_MS = 1000

/** The window's key in the rates bucket: letters, digits and `-_=.` only, as KV keys allow. */
export function windowKey (ask: Pick<WindowAsk, 'group' | 'subject' | 'start'>): string {
  return `w.${ask.group}.${Buffer.from(ask.subject).toString('base64url')}.${ask.start}`
}

const isWrongLastSequence = (err: unknown): boolean => (err as { api_error?: { err_code?: number } }).api_error?.err_code === 10071

/**
 * Cluster-wide rate limits (src/http/rate-limit.ts): a window's total granted to the nodes is one key in the engine's
 * rates bucket, raised by compare-and-set, so the nodes together are never granted more than the limit. Run by the
 * supervisor, which holds the node's connection to the engine; it writes each grant into the windows its hot threads
 * share and wakes them.
 */
export class RateLeases {
  readonly #rates: KV
  readonly #limiter: RateLimiter
  readonly #log: Logger
  readonly #onGranted: () => void
  #warned = false

  constructor (deps: { rates: KV, limiter: RateLimiter, log: Logger, onGranted: () => void }) {
    this.#rates = deps.rates
    this.#limiter = deps.limiter
    this.#log = deps.log
    this.#onGranted = deps.onGranted
  }

  /**
   * Asks the engine for the next part of a window. If it has not answered within LOCAL_GRANT_MS (a member lost, an
   * election), the node grants itself the part, no more than the window had left when the node last heard, and
   * limits alone until the engine answers again: a key may then get up to its limit from each node, the price of
   * requests that do not stop. An answer that comes after that adds only what it granted beyond the node's own part.
   */
  ask (ask: WindowAsk): void {
    const want = chunkFor(ask.limit, ask.grants)
    let own: number | undefined
    const timer = setTimeout(() => alone(`no answer in ${LOCAL_GRANT_MS} ms`), LOCAL_GRANT_MS)
    const alone = (why: unknown): void => {
      if (own !== undefined) return
      clearTimeout(timer)
      if (!this.#warned) this.#log.warn('cluster: the engine did not grant a rate window in time; this node limits alone until it does', { error: why instanceof Error ? why.message : String(why) })
      this.#warned = true
      own = Math.max(0, Math.min(want, ask.limit - ask.known))
      this.#limiter.granted(ask, { granted: own, total: ask.known, spent: false })
      this.#onGranted()
    }
    this.#grant(ask, want).then((grant) => {
      this.#warned = false
      clearTimeout(timer)
      this.#limiter.granted(ask, own === undefined ? grant : { ...grant, beyond: own })
      this.#onGranted()
    }, alone)
  }

  /** Tries until it lands: other nodes' grants to the window landing first are no reason to grant alone. */
  async #grant (ask: WindowAsk, want: number): Promise<WindowGrant> {
    const key = windowKey(ask)
    for (;;) {
      const entry = await this.#rates.get(key)
      const total = entry !== null && entry.operation === 'PUT' ? Number(entry.string()) : 0
      const granted = Math.min(want, ask.limit - total)
      if (granted <= 0) return { granted: 0, total, spent: true }
      const value = new TextEncoder().encode(String(total + granted))
      try {
        if (entry === null) await this.#rates.create(key, value)
        else await this.#rates.update(key, value, entry.revision)
        return { granted, total: total + granted, spent: total + granted >= ask.limit }
      } catch (err) {
        // Another node's grant to the same window landed first: read its total and try again.
        if (!isWrongLastSequence(err)) throw err
      }
    }
  }
}
