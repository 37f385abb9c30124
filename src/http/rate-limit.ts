import type { Clock } from '../clock.js'
import type { RateGroup } from '../generated/types.js'
import type { Principal } from './route.js'
import { SharedTable } from './shared-table.js'

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
  /* designed: stateless MCP clients open each tool call with initialize and its notification, so a call is about three requests; a conformance run of every AdCP scenario makes about 200 */ agents: { sandbox: 300, production: 1200, windowMs: MINUTE, per: 'key' },
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

/** Windows the limiter holds at once: a subject's window is taken over early only when its probe run is this full. */
const SLOTS = 1 << 18

/** A window's numbers in its slot: when it started (the slot's age), requests counted, its length. */
const START = 0
const COUNT = 1
const LENGTH = 2

const ended = (now: number) => (v: Float64Array, b: number) => now >= v[b + START]! + v[b + LENGTH]!

/**
 * Fixed windows per (group, subject), each starting at the subject's first request so that clients do not all reset
 * on the same second. The windows are in shared memory (SharedTable): every hot thread counts into the same window, so
 * a key's limit is exact however its connections are spread over threads. A deployment of several nodes hashes on the
 * API key at the load balancer (DESIGN, scale), which keeps per-key limits exact across nodes too. An ended window's
 * slot is reused, so idle subjects cost nothing.
 */
export class RateLimiter {
  readonly #clock: Clock
  readonly #windows: SharedTable

  /** buffer: the shared windows of another thread's limiter. */
  constructor (clock: Clock, buffer?: SharedArrayBuffer) {
    this.#clock = clock
    this.#windows = new SharedTable(SLOTS, 3, buffer)
  }

  /** The memory to hand a hot thread's limiter. */
  get buffer (): SharedArrayBuffer {
    return this.#windows.buffer
  }

  /** Counts one request against the subject's window and says whether it may proceed. */
  take (group: RateGroup, subject: string, limit: number, windowMs: number): RateDecision {
    const now = this.#clock.now()
    return this.#windows.with(group + '\u0000' + subject, ended(now), (v, b, fresh) => {
      if (fresh) {
        v[b + START] = now
        v[b + COUNT] = 0
        v[b + LENGTH] = windowMs
      }
      const resetSeconds = Math.max(1, Math.ceil((v[b + START]! + v[b + LENGTH]! - now) / 1000))
      if (v[b + COUNT]! >= limit) return { allowed: false, limit, remaining: 0, resetSeconds }
      v[b + COUNT]!++
      return { allowed: true, limit, remaining: limit - v[b + COUNT]!, resetSeconds }
    })
  }
}
