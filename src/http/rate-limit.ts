import type { Clock } from '../clock.js'
import type { RateGroup } from '../generated/types.js'
import type { Principal } from '../auth/principal.js'
import { fnv, SharedTable } from './shared-table.js'

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
  /** A cluster node: this node should ask the engine for more of the window now (src/cluster/rate-grants.ts). */
  ask?: WindowAsk
  /**
   * A cluster node: this node has spent what it holds of the window, and the engine may still grant more; the request
   * waits for the grant rather than be refused under the limit.
   */
  wait?: boolean
}

/** A cluster node's request for more of a window than it holds, sent to its supervisor (src/cluster/rate-grants.ts). */
export interface WindowAsk {
  group: RateGroup
  subject: string
  /** The window's start (ms), the same on every node (alignedStart). */
  start: number
  windowMs: number
  limit: number
  /** Grants this node had in the window before this one: each is twice the last (chunkFor). */
  grants: number
  /** What every node together held of the window when this node last heard (0 before its first grant). */
  known: number
}

/** What the engine granted a node for one window. */
export interface WindowGrant {
  granted: number
  /** What every node together holds of the window now. */
  total: number
  /** The window is spent cluster-wide: the engine grants no more until the next one. */
  spent: boolean
  /**
   * The engine's answer to an ask the node had already granted itself a part for (it did not answer in time): only
   * what it granted beyond that part is added, so the node does not hold both.
   */
  beyond?: number
}

/** Windows the limiter holds at once: a subject's window is taken over early only when its probe run is this full. */
const SLOTS = 1 << 18

/** A window's numbers in its slot: when it started (the slot's age), requests counted, its length. */
const START = 0
const COUNT = 1
const LENGTH = 2
/** A cluster node's numbers for the window: allowed here in all, of that granted without asking, the cluster's total
 * when last heard, a request to the engine on its way (1), the limit under which the window was spent cluster-wide
 * (0 while it is not: a seat's limit raised within the window is not spent), grants so far. */
const GRANTED = 3
const CREDIT = 4
const KNOWN = 5
const ASKED = 6
const SPENT = 7
const GRANTS = 8

const ended = (now: number) => (v: Float64Array, b: number) => now >= v[b + START]! + v[b + LENGTH]!

/**
 * A cluster's window for a key at now: the same on every node without asking anyone (their clocks agree, NTP),
 * shifted within the window length by the key's hash, so that clients do not all reset at once.
 */
export function alignedStart (key: string, windowMs: number, now: number): number {
  const offset = (fnv(key, 0x811c9dc5) >>> 0) % windowMs
  return Math.floor((now - offset) / windowMs) * windowMs + offset
}

/**
 * How much of a window a cluster node may spend without asking the engine, so that a window's first requests do not
 * wait: 1% of the limit (none under 100), so that N nodes exceed a limit by at most N% even when each spends it before
 * hearing of the others.
 */
export function creditFor (limit: number): number {
  return Math.floor(limit / 100)
}

/**
 * How much a node asks the engine for: 1% of the limit at first, doubling with each grant in the window up to 10%, so
 * that a node taking a key's whole traffic asks a few times a window and one taking little holds little unused.
 */
export function chunkFor (limit: number, grants: number): number {
  return Math.min(Math.ceil(limit / 10), Math.ceil(limit / 100) * 2 ** Math.min(grants, 10))
}

/**
 * Fixed windows per (group, subject), each starting at the subject's first request so that clients do not all reset
 * on the same second. The windows are in shared memory (SharedTable): every hot thread counts into the same window, so
 * a key's limit is exact however its connections are spread over threads. An ended window's slot is reused, so idle
 * subjects cost nothing.
 *
 * With `leased: true` (a cluster node) a window is the whole cluster's: it starts at the same moment on every node
 * (alignedStart), and a node spends only what the engine granted it (src/cluster/rate-grants.ts: parts decided in a
 * log, in its order), plus its credit (creditFor), asking for more before it runs out. The limit then holds
 * cluster-wide within N% for N nodes, however a client spreads its requests.
 */
export class RateLimiter {
  readonly #clock: Clock
  readonly #windows: SharedTable
  readonly #leased: boolean

  /** buffer: the shared windows of another thread's limiter (made with the same leased setting). */
  constructor (clock: Clock, buffer?: SharedArrayBuffer, options: { leased?: boolean } = {}) {
    this.#clock = clock
    this.#leased = options.leased === true
    this.#windows = new SharedTable(SLOTS, this.#leased ? 9 : 3, buffer)
  }

  /** The memory to hand a hot thread's limiter. */
  get buffer (): SharedArrayBuffer {
    return this.#windows.buffer
  }

  /** Counts one request against the subject's window and says whether it may proceed. */
  take (group: RateGroup, subject: string, limit: number, windowMs: number): RateDecision {
    const now = this.#clock.now()
    const key = group + '\u0000' + subject
    if (this.#leased) return this.#windows.with(key, ended(now), (v, b, fresh) => this.#takeLeased(v, b, fresh, { group, subject, start: alignedStart(key, windowMs, now), windowMs, limit, grants: 0, known: 0 }, now))
    return this.#windows.with(key, ended(now), (v, b, fresh) => {
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

  /** A cluster node's share of the window: what it was granted. It asks at its first request, then with half a grant left. */
  #takeLeased (v: Float64Array, b: number, fresh: boolean, window: WindowAsk, now: number): RateDecision {
    const { limit } = window
    if (fresh) {
      v.fill(0, b, b + 9)
      v[b + START] = window.start
      v[b + LENGTH] = window.windowMs
      v[b + GRANTED] = v[b + CREDIT] = creditFor(limit)
    }
    const resetSeconds = Math.max(1, Math.ceil((v[b + START]! + v[b + LENGTH]! - now) / 1000))
    const allowed = v[b + COUNT]! < v[b + GRANTED]! && v[b + COUNT]! < limit
    if (allowed) v[b + COUNT]!++
    const spent = v[b + SPENT]! >= limit
    const grants = v[b + GRANTS]!
    let ask: WindowAsk | undefined
    // The first ask waits until half the credit is spent: a subject that makes fewer requests a window than that (a
    // screen's player asking for a spot every 15 s, against 6,000 a minute) never costs the engine a grant.
    const due = grants === 0 ? v[b + COUNT]! >= v[b + CREDIT]! / 2 : v[b + GRANTED]! - v[b + COUNT]! <= chunkFor(limit, grants) / 2
    if (v[b + ASKED] === 0 && !spent && due) {
      v[b + ASKED] = 1
      ask = { ...window, start: v[b + START]!, windowMs: v[b + LENGTH]!, grants, known: v[b + KNOWN]! }
    }
    // What the other nodes hold of the window counts as spent: they may spend it before this node hears.
    const others = v[b + KNOWN]! - (v[b + GRANTED]! - v[b + CREDIT]!)
    const remaining = Math.max(0, Math.min(limit - v[b + COUNT]!, limit - others - v[b + COUNT]!))
    const decision: RateDecision = { allowed, limit, remaining, resetSeconds }
    if (ask !== undefined) decision.ask = ask
    if (!allowed && !spent && v[b + COUNT]! < limit) decision.wait = true
    return decision
  }

  /**
   * The engine's answer to a node's ask (src/cluster/rate-grants.ts), or the node's own when the engine could not
   * answer in time. A window that ended meanwhile is left alone.
   */
  granted (ask: WindowAsk, grant: WindowGrant): void {
    const now = this.#clock.now()
    this.#windows.with(ask.group + '\u0000' + ask.subject, ended(now), (v, b, fresh) => {
      if (fresh || v[b + START] !== ask.start) {
        // No such window here any more: leave the slot free (ended) for the next.
        if (fresh) v.fill(0, b, b + 9)
        return
      }
      v[b + KNOWN] = Math.max(v[b + KNOWN]!, grant.total)
      if (grant.spent) v[b + SPENT] = Math.max(v[b + SPENT]!, ask.limit)
      if (grant.beyond !== undefined) {
        v[b + GRANTED]! += Math.max(0, grant.granted - grant.beyond)
        return
      }
      v[b + GRANTED]! += grant.granted
      v[b + GRANTS]!++
      v[b + ASKED] = 0
    })
  }
}
