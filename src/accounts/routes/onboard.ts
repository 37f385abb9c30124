import { randomUUID } from 'node:crypto'
import { DSP_SCOPES, KEY_PREFIX, mintKey, presentedKey, saveKey, updateKey } from '../../auth/keys.js'
import { iso } from '../../clock.js'
import type { ResolvedConfig } from '../../config.js'
import { ApiError } from '../../errors.js'
import { callbackUrlProblem } from '../../net/url-guard.js'
import type { ApiKeyCredential, OnboardRequest, SandboxInfo } from '../../generated/types.js'
import { ok, route, type RouteDef } from '../../http/route.js'
import { RATE_GROUPS } from '../../http/rate-limit.js'
import type { SeatRecord } from '../records.js'
import type { Deps } from '../../deps.js'
import { saveSeat } from '../seats.js'
import { registrationView } from '../views.js'

function sandboxBlock (config: ResolvedConfig): SandboxInfo {
  const base = `${config.baseUrl}/openrtb/v2`
  return {
    description: 'New seats start in sandbox: every endpoint answers and bids are validated and scored, but they do not enter the live auction. The operator approves production access.',
    rate_limit: `${RATE_GROUPS.bidding.sandbox} requests per minute per API key in each rate group (${RATE_GROUPS.bidding.production} on bidding once approved)`,
    endpoints: { bid: `POST ${base}/bid`, adslots: `GET ${base}/adslots`, stats: `GET ${base}/stats` },
    auth: 'Send the key as Authorization: Bearer <API_KEY> (or x-api-key: <API_KEY>) on every /openrtb/v2 request.'
  }
}

/** The answer to a seat_id another seat holds, or (on a cluster node) one another node is registering right now. */
function seatIdTaken (store: Deps['store'], seatId: string): ApiError {
  const existing = store.seats.get(seatId.toLowerCase())
  if (existing === undefined) return new ApiError('seat_id_already_registered', `seat_id ${seatId} is already registered.`, { param: 'seat_id' })
  return new ApiError('seat_id_already_registered', `seat_id ${existing.seat_id} is already registered (status: ${existing.status}).`, { param: 'seat_id', status: existing.status })
}

/**
 * POST /openrtb/v2/onboard (spec, POST /onboard): no key mints a legacy key shown once; a valid platform key is linked
 * to the new seat and gains the DSP scopes; an invalid key is refused before anything is minted (401, by the auth
 * layer). Seat and key commit in one transaction, so a seat never exists without its key.
 */
export function onboardRoute ({ config, store, outbox, sealer }: Deps): RouteDef {
  return route<OnboardRequest>({
    method: 'post',
    path: '/openrtb/v2/onboard',
    summary: 'Register a buyer seat',
    tag: 'Accounts',
    envelope: 'flat',
    auth: 'optional-key',
    rateGroup: 'onboarding',
    body: 'OnboardRequest',
    data: 'OnboardResult',
    status: 201,
    errors: ['invalid_email', 'invalid_seat_id', 'invalid_webhook_url', 'seat_id_already_registered', 'already_exists', 'authentication_required', 'api_key_provisioning_failed'],
    unique: (ctx) => ({ name: `seat_id:${ctx.body.seat_id.toLowerCase()}`, taken: () => seatIdTaken(store, ctx.body.seat_id) }),
    handler: (ctx) => {
      const body = ctx.body
      if (store.seats.get(body.seat_id.toLowerCase()) !== undefined) throw seatIdTaken(store, body.seat_id)
      const now = iso(ctx.now)
      const seat: SeatRecord = {
        id: randomUUID(),
        seat_id: body.seat_id,
        company_name: body.company_name,
        status: 'sandbox',
        openrtb_version: body.openrtb_version ?? '2.6',
        contact_email: body.contact_email,
        billing_email: body.billing_email ?? body.contact_email,
        rate_limits: {},
        created_at: now,
        updated_at: now
      }
      for (const field of ['notification_url', 'webhook_url'] as const) {
        const url = body[field]
        if (url === undefined) continue
        const problem = callbackUrlProblem(url, config.allowPrivateCallbackUrls)
        if (problem !== undefined) throw new ApiError('invalid_webhook_url', `${field} ${problem}.`, { param: field })
        seat[field] = url
      }
      if (body.billing_email === undefined) ctx.warn('billing_email not given: invoices go to contact_email.')

      let credential: ApiKeyCredential
      const linked = ctx.principal?.key
      if (linked !== undefined) {
        if (linked.seat_id !== undefined) {
          throw new ApiError('already_exists', `This key is already linked to seat ${linked.seat_id}. Onboard without a key, or with a new platform key.`)
        }
        const scopes = [...new Set([...linked.scopes, ...DSP_SCOPES])]
        const presented = presentedKey(ctx.headers)
        // Sealed so that it can sign the seat's notifications and webhook_url events.
        updateKey(store, linked, { seat_id: seat.seat_id, scopes, ...(presented !== undefined && presented !== '' ? { sealed: sealer.seal(linked.key_id, presented) } : {}) })
        credential = { key_id: linked.key_id, reused_platform_key: true, prefix: linked.prefix, scopes, rate_limit_rpm: RATE_GROUPS.bidding.sandbox }
      } else if (ctx.dryRun) {
        ctx.warn('Dry run: no key was minted; the real request returns the key once in api_key.key.')
        credential = { reused_platform_key: false, prefix: KEY_PREFIX.legacy, scopes: DSP_SCOPES, rate_limit_rpm: RATE_GROUPS.bidding.sandbox }
      } else {
        const { key, record } = mintKey('legacy', DSP_SCOPES, now, { seat_id: seat.seat_id })
        record.sealed = sealer.seal(record.key_id, key)
        saveKey(store, record)
        credential = { reused_platform_key: false, key, prefix: record.prefix, scopes: record.scopes, rate_limit_rpm: RATE_GROUPS.bidding.sandbox }
      }
      saveSeat(store, seat)
      outbox.append('seat.registered', `seat:${seat.seat_id}`, { seat_id: seat.seat_id, status: seat.status, reused_platform_key: credential.reused_platform_key }, seat.seat_id)
      return ok({ registration: registrationView(seat), api_key: credential, sandbox: sandboxBlock(config) }, 201)
    }
  })
}
