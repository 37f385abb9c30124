import { randomBytes } from 'node:crypto'
import type { Logger } from '../log.js'
import type { Store } from '../store/store.js'
import { wholeTable } from './checkpoints.js'
import { chunkFor, type RateLimiter, type WindowAsk, type WindowGrant } from '../http/rate-limit.js'
import { LOCAL_GRANT_MS } from './node-link.js'
import { FRESH_KEYS_KEEP_MS, type AppliedAt, type PartitionMachine } from './partition-log.js'
import type { Verdict } from './records.js'

// Cluster-wide rate limits (src/http/rate-limit.ts): a window's parts are granted to the nodes in a log of their own,
// decided at apply in the log's order (issue 47), so the nodes together are never granted more than the limit. They
// were numbered records made by KV creates, which nats-server 2.9.10 lets race (issue 4320: two creates in flight can
// both win, a part granted twice).

/** The rate windows' log: every node follows it. */
export const RATES_LOG = 'RATES'

/**
 * How long, in log time, a window's total is kept after the window ends by its askers' clocks: far past any skew NTP
 * leaves, so no node still asking for a window finds it started again from nothing.
 */
const KEEP_AFTER_END_MS = 10 * 60_000

/** Ended windows removed by one apply at most: the table's upkeep stays small beside the entry itself. */
const LAPSE_BATCH = 64

interface GrantCommand {
  op: 'grant'
  /** The window: its group, subject and start (windowKey). */
  window: string
  /** When the window ends (ms), by the asker's clock. */
  ends: number
  /** The part asked for. */
  want: number
  /** The window's limit as the asker read it (a seat's custom limit may change within a window). */
  limit: number
}

/** A window's name in the log: the same on every node, since its start is (alignedStart). */
function windowKey (ask: Pick<WindowAsk, 'group' | 'subject' | 'start'>): string {
  return `${ask.group}\u0000${ask.subject}\u0000${ask.start}`
}

/** Removes the totals of windows that ended KEEP_AFTER_END_MS before log time now, oldest first. */
function lapse (store: Store, now: number): void {
  let n = 0
  for (const key of store.rateGrants.getKeys({ end: [now - KEEP_AFTER_END_MS, '\uffff'] })) {
    if (n++ === LAPSE_BATCH) break
    store.rateGrants.removeSync(key as [number, string])
  }
}

/**
 * The windows' rule, applied in log order on every node: a part is granted up to what is left of the limit the asker
 * read, counted from every grant the log applied to the window before it.
 */
export function rateMachine (store: Store): PartitionMachine {
  return {
    keepKeysMs: FRESH_KEYS_KEEP_MS,
    tables: [wholeTable('rate_grants', store.rateGrants)],
    apply (body: unknown, at: AppliedAt): Verdict {
      lapse(store, at.logTime)
      const c = body as GrantCommand
      const key: [number, string] = [c.ends, c.window]
      const total = store.rateGrants.get(key) ?? 0
      const granted = Math.max(0, Math.min(c.want, c.limit - total))
      if (granted > 0) store.rateGrants.putSync(key, total + granted)
      return { status: 'accepted', result: { granted, total: total + granted } }
    }
  }
}

/**
 * A node's asks for the next part of a window, run by the supervisor, which writes each grant into the windows its
 * hot threads share and wakes them.
 */
export class RateGrants {
  readonly #propose: (key: string, body: GrantCommand) => Promise<Verdict | undefined>
  readonly #limiter: RateLimiter
  readonly #log: Logger
  readonly #onGranted: () => void
  #warned = false

  constructor (deps: { propose: (key: string, body: GrantCommand) => Promise<Verdict | undefined>, limiter: RateLimiter, log: Logger, onGranted: () => void }) {
    this.#propose = deps.propose
    this.#limiter = deps.limiter
    this.#log = deps.log
    this.#onGranted = deps.onGranted
  }

  /**
   * Asks the log for the next part of a window. If it has not answered within LOCAL_GRANT_MS (a member lost, an
   * election), the node grants itself the part, no more than the window had left when the node last heard, and
   * limits alone until the log answers again: a key may then get up to its limit from each node, the price of
   * requests that do not stop. An answer that comes after that adds only what it granted beyond the node's own part.
   * A grant whose answer is lost stays counted in the window and unspent: the limit is undershot, never passed.
   */
  ask (ask: WindowAsk): void {
    const want = chunkFor(ask.limit, ask.grants)
    let own: number | undefined
    const timer = setTimeout(() => alone(`no answer in ${LOCAL_GRANT_MS} ms`), LOCAL_GRANT_MS)
    const alone = (why: unknown): void => {
      if (own !== undefined) return
      clearTimeout(timer)
      if (!this.#warned) this.#log.warn('cluster: the rate windows\' log did not grant a part in time; this node limits alone until it does', { error: why instanceof Error ? why.message : String(why) })
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
    const command: GrantCommand = { op: 'grant', window: windowKey(ask), ends: ask.start + ask.windowMs, want, limit: ask.limit }
    const verdict = await this.#propose(`grant:${randomBytes(9).toString('base64url')}`, command)
    if (verdict === undefined) throw new Error('the rate windows\' log did not decide the grant in time')
    const { granted, total } = verdict.result as { granted: number, total: number }
    return granted <= 0 ? { granted: 0, total, spent: true } : { granted, total, spent: total >= ask.limit }
  }
}
