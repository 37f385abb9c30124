import type { Clock } from '../clock.js'
import type { RateGroup } from '../generated/types.js'
import type { Principal } from './route.js'

interface GroupPolicy {
  sandbox: number
  production: number
  windowMs: number
  /** What is counted: the API key, or the client address (routes without a key, and failed authentication). */
  per: 'key' | 'ip'
}

const MINUTE = 60_000
const HOUR = 60 * MINUTE

/**
 * The spec's Limits table, plus the groups the spec leaves unnamed (marked): partner and proof routes, the public
 * files, operations endpoints, screen players, exchanges, and requests that fail authentication (counted per address
 * to slow key guessing).
 */
export const RATE_GROUPS: Record<RateGroup, GroupPolicy> = {
  onboarding: { sandbox: 5, production: 5, windowMs: HOUR, per: 'ip' },
  bidding: { sandbox: 100, production: 1000, windowMs: MINUTE, per: 'key' },
  inventory: { sandbox: 100, production: 200, windowMs: MINUTE, per: 'key' },
  creatives: { sandbox: 100, production: 100, windowMs: MINUTE, per: 'key' },
  campaigns: { sandbox: 100, production: 100, windowMs: MINUTE, per: 'key' },
  deals: { sandbox: 100, production: 100, windowMs: MINUTE, per: 'key' },
  reporting: { sandbox: 100, production: 100, windowMs: MINUTE, per: 'key' },
  /* designed */ account: { sandbox: 100, production: 100, windowMs: MINUTE, per: 'key' },
  /* designed */ partner: { sandbox: 6000, production: 6000, windowMs: MINUTE, per: 'key' },
  /* designed */ partner_registration: { sandbox: 10, production: 10, windowMs: HOUR, per: 'ip' },
  /* designed */ public: { sandbox: 600, production: 600, windowMs: MINUTE, per: 'ip' },
  /* designed */ ops: { sandbox: 6000, production: 6000, windowMs: MINUTE, per: 'ip' },
  /* designed */ uploads: { sandbox: 300, production: 300, windowMs: MINUTE, per: 'ip' },
  /* designed */ unauthenticated: { sandbox: 60, production: 60, windowMs: MINUTE, per: 'ip' },
  /* designed */ player: { sandbox: 6000, production: 6000, windowMs: MINUTE, per: 'ip' },
  /* designed: each bidder alias carries its own limit (operator API); this is the default */ exchange: { sandbox: 60000, production: 60000, windowMs: MINUTE, per: 'ip' }
}

/** The limit in force for a group and caller: the seat's custom limit, else the sandbox or production column. */
export function limitFor (group: RateGroup, principal: Principal | undefined): { limit: number, windowMs: number, custom: boolean } {
  const policy = RATE_GROUPS[group]
  const custom = principal?.seat?.rate_limits[group as keyof NonNullable<typeof principal.seat>['rate_limits']]
  if (typeof custom === 'number') return { limit: custom, windowMs: policy.windowMs, custom: true }
  const production = principal?.seat ? principal.seat.status === 'approved' : principal !== undefined
  return { limit: production ? policy.production : policy.sandbox, windowMs: policy.windowMs, custom: false }
}

/** What the RateLimit-* headers say after a request was counted. */
export interface RateDecision {
  allowed: boolean
  limit: number
  remaining: number
  /** Seconds until the window resets (RateLimit-Reset, Retry-After). */
  resetSeconds: number
}

interface Window {
  start: number
  count: number
  windowMs: number
}

/**
 * Fixed windows per (group, subject), each starting at the subject's first request so that clients do not all reset
 * on the same second. In memory: a deployment of several nodes hashes on the API key at the load balancer
 * (DESIGN, scale), which keeps per-key limits exact.
 */
export class RateLimiter {
  readonly #clock: Clock
  readonly #windows = new Map<string, Window>()

  constructor (clock: Clock) {
    this.#clock = clock
  }

  /** Counts one request against the subject's window and says whether it may proceed. */
  take (group: RateGroup, subject: string, limit: number, windowMs: number): RateDecision {
    const now = this.#clock.now()
    const id = group + '\u0000' + subject
    let w = this.#windows.get(id)
    if (w === undefined || now >= w.start + w.windowMs) {
      w = { start: now, count: 0, windowMs }
      this.#windows.set(id, w)
    }
    const resetSeconds = Math.max(1, Math.ceil((w.start + w.windowMs - now) / 1000))
    if (w.count >= limit) return { allowed: false, limit, remaining: 0, resetSeconds }
    w.count++
    return { allowed: true, limit, remaining: limit - w.count, resetSeconds }
  }

  /** Forgets windows that have ended; called on a timer so idle subjects cost no memory. */
  sweep (): void {
    const now = this.#clock.now()
    for (const [id, w] of this.#windows) if (now >= w.start + w.windowMs) this.#windows.delete(id)
  }
}
