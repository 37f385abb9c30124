import type { KV } from 'nats'
import type { Logger } from '../log.js'
import { chunkFor, type RateLimiter, type WindowAsk, type WindowGrant } from '../http/rate-limit.js'
import { LOCAL_GRANT_MS } from './node-link.js'
import { takeGrant, type GrantRun } from './numbered-keys.js'

/** A window's grants' key prefix in the rates bucket (grant n is `<prefix>.<n>`): letters, digits and `-_=.` only. */
function windowBase (ask: Pick<WindowAsk, 'group' | 'subject' | 'start'>): string {
  return `w.${ask.group}.${Buffer.from(ask.subject).toString('base64url')}.${ask.start}`
}

/**
 * Cluster-wide rate limits (src/http/rate-limit.ts). A window's grants to the nodes are numbered records in the
 * engine's rates bucket, each holding the window's total through itself; a node takes grant n with a KV create, which
 * has one winner however many nodes try, and a node that loses reads the winner's total and tries n + 1. So the nodes
 * together are never granted more than the limit. Not a counter updated by compare-and-set: nats-server 2.9's
 * clustered streams let concurrent updates expecting the same revision all succeed (three clients adding 1 by
 * compare-and-set 600 times ended at 524), while concurrent creates of one key keep one winner. Run by the
 * supervisor, which holds the node's connection to the engine; it writes each grant into the windows its hot threads
 * share and wakes them.
 */
export class RateLeases {
  readonly #rates: KV
  readonly #limiter: RateLimiter
  readonly #log: Logger
  readonly #onGranted: () => void
  /** Per window (its grants' key prefix), what this node has learned; dropped once the window has ended. */
  readonly #known = new Map<string, GrantRun & { ends: number }>()
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

  async #grant (ask: WindowAsk, want: number): Promise<WindowGrant> {
    const window = windowBase(ask)
    this.#forgetEnded(Date.now())
    let known = this.#known.get(window)
    if (known === undefined) this.#known.set(window, known = { next: 0, total: 0, ends: ask.start + ask.windowMs })
    const { granted, total } = await takeGrant(this.#rates, window, known, want, ask.limit)
    return granted <= 0 ? { granted: 0, total, spent: true } : { granted, total, spent: total >= ask.limit }
  }

  #forgetEnded (now: number): void {
    for (const [window, known] of this.#known) if (known.ends <= now) this.#known.delete(window)
  }
}
