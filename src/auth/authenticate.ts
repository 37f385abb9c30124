import { timingSafeEqual, createHash } from 'node:crypto'
import type { Clock } from '../clock.js'
import { ApiError } from '../errors.js'
import type { Access, Principal } from './principal.js'
import type { Store } from '../store/store.js'
import { Derived } from '../store/read-cache.js'
import { findKey, presentedKey } from './keys.js'

const CACHE_MS = 1000
const CACHE_MAX = 100_000

/**
 * Resolves API keys to principals. Hot routes see the same few keys at high rates, so a resolved principal is kept
 * for up to a second, and dropped as soon as the keys, seats or partners table changes: their generations live in
 * memory shared by the hot threads (the store's cached tables), so a key revoked through one thread stops working in
 * all of them at once, with nobody having to remember to say so. Keys are resolved before a route's transaction
 * opens, so a principal is never read from writes that may still roll back.
 */
export class Authenticator {
  readonly #store: Store
  readonly #clock: Clock
  readonly #adminDigest: Buffer
  /** Resolved principals, each for CACHE_MS at most, while the keys, seats and partners stand. */
  readonly #principals: Derived<string, { principal: Principal, until: number }>

  constructor (store: Store, clock: Clock, adminToken: string) {
    this.#store = store
    this.#clock = clock
    this.#adminDigest = createHash('sha256').update(adminToken).digest()
    this.#principals = new Derived(() => this.#generation(), { max: CACHE_MAX, fresh: (hit) => hit.until > clock.now() })
  }

  /**
   * Moves whenever a principal's tables do: every term only grows, so any change grows the sum. Undefined while this
   * thread's reads may not match the versions (CachedTable.version): a principal resolved then is not kept.
   */
  #generation (): number | undefined {
    const s = this.#store
    const keys = s.keys.version
    const seats = s.seats.version
    const partners = s.partners.version
    return keys === undefined || seats === undefined || partners === undefined ? undefined : keys + seats + partners
  }

  /** The principal of a presented key, or undefined when the key is unknown, revoked or expired. */
  resolve (presented: string): Principal | undefined {
    return this.#principals.of(presented, () => {
      const now = this.#clock.now()
      const key = findKey(this.#store, presented, now)
      if (key === undefined) return undefined
      const principal: Principal = { key }
      if (key.seat_id !== undefined) {
        const seat = this.#store.seats.get(key.seat_id.toLowerCase())
        if (seat !== undefined) principal.seat = seat
      }
      if (key.partner_id !== undefined) {
        const partner = this.#store.partners.get(key.partner_id)
        if (partner !== undefined) principal.partner = partner
      }
      return { principal, until: now + CACHE_MS }
    })?.principal
  }

  /** Whether a bearer token is the operator token (constant-time). */
  isAdmin (headers: Record<string, string>): boolean {
    const token = presentedKey(headers)
    if (!token) return false
    return timingSafeEqual(createHash('sha256').update(token).digest(), this.#adminDigest)
  }

  /**
   * Resolves the caller for a route's auth mode (spec, Authentication): 401 authentication_required for a missing or
   * unresolved key, and for the operator token on /admin routes. Runs before the rate limiter, which counts per key.
   */
  authenticate (route: Access, headers: Record<string, string>): Principal | undefined {
    if (route.auth === 'none') return undefined
    if (route.auth === 'admin') {
      if (!this.isAdmin(headers)) throw new ApiError('authentication_required', 'Send the operator token as Authorization: Bearer <ADMIN_TOKEN>.')
      return undefined
    }
    const presented = presentedKey(headers)
    if (presented === undefined && route.auth === 'optional-key') return undefined
    if (!presented) throw new ApiError('authentication_required', 'Send your API key as Authorization: Bearer <API_KEY> or x-api-key: <API_KEY>.')
    const principal = this.resolve(presented)
    if (principal === undefined) throw new ApiError('authentication_required', 'The API key is not valid: it is unknown, revoked or expired.')
    return principal
  }

  /**
   * Checks what the resolved caller may do: a seat route needs a seat (401 when the key has none) that is neither
   * suspended nor revoked (403), and the route's scope (403 missing_scope; sandbox keys pass every scope check); a
   * partner route needs a partner key (403 not_authorized).
   */
  checkAccess (route: Access, principal: Principal | undefined): void {
    if (principal === undefined) return
    if (route.auth === 'partner') {
      if (principal.partner === undefined) throw new ApiError('not_authorized', 'This route needs a partner key; register with POST /v1/partner/register.')
      return
    }
    if (route.auth !== 'seat') return
    const seat = principal.seat
    if (seat === undefined) throw new ApiError('authentication_required', 'This key has no seat yet: link it with POST /openrtb/v2/onboard (Authorization: Bearer <key>).')
    if (seat.status === 'suspended') throw new ApiError('seat_suspended', `Seat ${seat.seat_id} is suspended; contact support.`)
    if (seat.status === 'revoked') throw new ApiError('seat_revoked', `Seat ${seat.seat_id} was revoked.`)
    if (route.scope !== undefined && seat.status !== 'sandbox' && !principal.key.scopes.includes(route.scope)) {
      throw new ApiError('missing_scope', `This route needs the ${route.scope} scope.`, { required_scope: route.scope, granted_scopes: principal.key.scopes })
    }
  }
}
