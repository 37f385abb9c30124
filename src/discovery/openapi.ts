import { errorTable } from '../errors.js'
import { schemas } from '../generated/schemas.js'
import { RATE_GROUPS } from '../http/rate-limit.js'
import { isMutating, type RouteDef } from '../http/route.js'
import { schemaById } from '../http/validate.js'
import { retrySchedule } from '../webhooks/kind.js'
import { webhookDocs } from './openapi-webhooks.js'
import { MAX_PATH_PARAM_LENGTH, MAX_QUERY_VALUE_LENGTH } from '../http/url-params.js'
import { VERSION } from '../version.js'

type Json = Record<string, unknown>


/** A schema's type, looking through a $ref to one of ours. */
function typeOfSchema (s: Json): unknown {
  if (typeof s.$ref === 'string') return schemaById(s.$ref)?.type
  return s.type
}

/**
 * JSON Schema (draft-07, our source of truth) to an OpenAPI 3.0 Schema Object: refs point into components, a
 * ["T", "null"] type becomes nullable, const becomes a one-value enum, examples becomes example, and keywords 3.0 lacks
 * are dropped.
 */
export function toOpenApiSchema (node: unknown): unknown {
  if (Array.isArray(node)) return node.map(toOpenApiSchema)
  if (node === null || typeof node !== 'object') return node
  const out: Json = {}
  for (const [k, v] of Object.entries(node as Json)) {
    if ((k === 'oneOf' || k === 'anyOf') && Array.isArray(v) && v.some((s) => (s as Json)?.type === 'null')) {
      // 3.0 has no null type: X | null becomes nullable, with X under allOf so that a $ref keeps its siblings.
      const kept = v.filter((s) => (s as Json)?.type !== 'null') as Json[]
      const rest = kept.map(toOpenApiSchema)
      out.nullable = true
      // 3.0 ties nullable to a type sibling (linters refuse it alone): the type all alternatives share.
      const types = new Set(kept.map(typeOfSchema))
      if (types.size === 1 && [...types][0] !== undefined) out.type = [...types][0]
      if (rest.length === 1) out.allOf = rest
      else out[k] = rest
      continue
    }
    if (k === '$id' || k === '$schema' || k === 'propertyNames' || k === 'x-error-codes') continue
    if (k === '$ref' && typeof v === 'string') out.$ref = `#/components/schemas/${(schemaById(v)?.title as string | undefined) ?? v}`
    else if (k === 'type' && Array.isArray(v)) {
      const types = v.filter((t) => t !== 'null')
      out.type = types[0]
      if (v.includes('null')) out.nullable = true
    } else if (k === 'const') out.enum = [v]
    else if ((k === 'exclusiveMinimum' || k === 'exclusiveMaximum') && typeof v === 'number') {
      // draft-07's numeric form becomes 3.0's bound plus a boolean.
      out[k === 'exclusiveMinimum' ? 'minimum' : 'maximum'] = v
      out[k] = true
    }
    else if (k === 'examples' && Array.isArray(v)) out.example = v[0]
    else if (k === 'properties' || k === 'definitions') out[k] = Object.fromEntries(Object.entries(v as Json).map(([p, s]) => [p, toOpenApiSchema(s)]))
    else out[k] = typeof v === 'object' ? toOpenApiSchema(v) : v
  }
  return out
}

function envelopeOf (data: string | string[]): Json {
  const ref = (t: string) => ({ $ref: `#/components/schemas/${t}` })
  return {
    type: 'object',
    required: ['success', 'data'],
    properties: {
      success: { type: 'boolean', enum: [true] },
      data: Array.isArray(data) ? { oneOf: data.map(ref) } : ref(data),
      warnings: { type: 'array', items: { type: 'string' }, description: 'Present when the service decided something for the caller: a default it filled in (named with its value), a targeting that matches no screen yet.' }
    }
  }
}

const COMMON_HEADERS: Json = {
  'X-Request-Id': { $ref: '#/components/headers/XRequestId' },
  'RateLimit-Limit': { $ref: '#/components/headers/RateLimitLimit' },
  'RateLimit-Remaining': { $ref: '#/components/headers/RateLimitRemaining' },
  'RateLimit-Reset': { $ref: '#/components/headers/RateLimitReset' }
}

const COMMON_ERRORS: Record<string, string[]> = {
  400: ['invalid_json', 'invalid_parameter', 'missing_required_field', 'invalid_idempotency_key'],
  401: ['authentication_required'],
  403: ['missing_scope', 'not_authorized', 'seat_suspended', 'seat_revoked'],
  409: ['idempotency_key_in_use'],
  413: ['payload_too_large'],
  415: ['unsupported_media_type'],
  422: ['idempotency_key_mismatch'],
  429: ['rate_limited'],
  500: ['internal_error'],
  503: ['service_unavailable']
}

function errorResponses (route: RouteDef): Json {
  const statusOf = new Map(errorTable().map((e) => [e.code, e.status]))
  const byStatus = new Map<number, Set<string>>()
  const add = (code: string) => {
    const status = statusOf.get(code as never)!
    if (!byStatus.has(status)) byStatus.set(status, new Set())
    byStatus.get(status)!.add(code)
  }
  for (const code of route.errors ?? []) add(code)
  add('internal_error')
  add('rate_limited')
  // Any route while the node drains for shutdown; on a cluster node also a write the engine's quorum has not
  // confirmed in time, and a claim, lock or rate grant the engine could not give (with Retry-After).
  add('service_unavailable')
  if (route.auth !== 'none') add('authentication_required')
  if (route.auth === 'seat') { add('seat_suspended'); add('seat_revoked') }
  if (route.scope !== undefined) add('missing_scope')
  if (route.auth === 'partner') add('not_authorized')
  if (route.body !== undefined) for (const s of [400, 413, 415]) for (const c of COMMON_ERRORS[s]!) add(c)
  if (isMutating(route.method)) { add('idempotency_key_in_use'); add('idempotency_key_mismatch'); add('invalid_idempotency_key') }
  const envelope = route.envelope === 'nested' ? 'NestedError' : 'FlatError'
  const out: Json = {}
  for (const [status, codes] of [...byStatus].sort((a, b) => a[0] - b[0])) {
    const headers = status === 429 || status === 503 ? { ...COMMON_HEADERS, 'Retry-After': { $ref: '#/components/headers/RetryAfter' } } : COMMON_HEADERS
    out[String(status)] = {
      headers,
      description: `${route.envelope === 'nested' ? 'error.code' : 'error_code'}: ${[...codes].map((c) => route.envelope === 'nested' ? c.toUpperCase() : c).join(', ')}`,
      content: { 'application/json': { schema: { $ref: `#/components/schemas/${envelope}` } } }
    }
  }
  return out
}

function operation (route: RouteDef): Json {
  const parameters: Json[] = [...route.path.matchAll(/:(\w+)/g)].map((m) => ({ name: m[1], in: 'path', required: true, schema: { type: 'string', maxLength: MAX_PATH_PARAM_LENGTH } }))
  if (route.querySchema !== undefined) {
    const schema = schemas[route.querySchema] as unknown as { properties: Record<string, Json>, required?: string[] }
    for (const [name, prop] of Object.entries(schema.properties)) {
      parameters.push({ name, in: 'query', required: schema.required?.includes(name) ?? false, description: prop.description ?? '', schema: toOpenApiSchema({ ...prop, description: undefined }) })
    }
  }
  for (const q of route.query ?? []) parameters.push({ name: q.name, in: 'query', required: q.required ?? false, description: q.description, schema: toOpenApiSchema(q.schema) })
  if (isMutating(route.method)) {
    parameters.push({ $ref: '#/components/parameters/DryRun' }, { $ref: '#/components/parameters/IdempotencyKey' })
  }
  const status = String(route.status ?? 200)
  const success: Json = route.data !== undefined
    ? { description: 'Success.', headers: COMMON_HEADERS, content: { 'application/json': { schema: route.data ? envelopeOf(route.data) : {} } } }
    : { description: 'Success.', content: { [route.produces ?? 'application/json']: { schema: route.rawSchema !== undefined ? { $ref: `#/components/schemas/${route.rawSchema}` } : { type: 'string' } } } }
  const responses: Json = { [status]: success }
  if (route.noContent !== undefined) responses['204'] = { description: route.noContent }
  if (route.computed === true) responses['202'] = { description: 'ClickHouse has not answered within REPORT_WAIT_MS (10 s): ask again after Retry-After seconds.', headers: { ...COMMON_HEADERS, 'Retry-After': { $ref: '#/components/headers/RetryAfter' } }, content: { 'application/json': { schema: envelopeOf('ReportPending') } } }
  if (isMutating(route.method)) responses['200'] ??= { description: 'Dry run (?dry_run=true): nothing persisted.', content: { 'application/json': { schema: { $ref: '#/components/schemas/DryRunResponse' } } } }
  const op: Json = {
    operationId: `${route.method}${route.path.replace(/[^a-zA-Z0-9]+(\w)?/g, (_, c: string | undefined) => (c ?? '').toUpperCase())}`,
    summary: route.summary,
    tags: [route.tag],
    parameters,
    responses: { ...responses, ...errorResponses(route) },
    'x-rate-group': route.rateGroup
  }
  const description = [route.description, route.scope ? `Scope: \`${route.scope}\`.` : undefined, `Rate group: ${route.rateGroup}.`].filter(Boolean).join('\n\n')
  op.description = description
  if (route.scope !== undefined) op['x-scope'] = route.scope
  if (route.auth === 'admin') op.security = [{ adminToken: [] }]
  else if (route.auth === 'none') op.security = []
  else if (route.auth === 'optional-key') op.security = [{}, { bearerAuth: [] }, { apiKeyHeader: [] }]
  if (route.body !== undefined) op.requestBody = { required: true, content: { 'application/json': { schema: { $ref: `#/components/schemas/${route.body}` } } } }
  return op
}

function limitsTable (): string {
  const counted = (g: string, per: string) => g === 'exchange' ? 'per bidder alias, at the limit its configuration sets (this default for unknown aliases)' : `per ${per === 'key' ? 'API key' : 'client address'}`
  const rows = Object.entries(RATE_GROUPS).map(([g, p]) => `| ${g} | ${p.sandbox} | ${p.production} | ${p.windowMs / 1000} s | ${counted(g, p.per)} |`)
  return ['| Group | Sandbox | Production | Window | Counted |', '|---|---|---|---|---|', ...rows].join('\n')
}

const DESCRIPTION = `Programmatic buying for digital out-of-home screens: the buyer control plane (/openrtb/v2), the partner device API (/v1/partner), proof of play (/v1/advertiser/proof), the operator API (/admin/v1) and public discovery files.

## Authentication
Send the API key as \`Authorization: Bearer <API_KEY>\` (recommended) or \`x-api-key: <API_KEY>\`. Keys are stored only as SHA-256 digests and shown once. Scopes, not prefixes, grant access; sandbox seats pass every scope check. A missing or unresolved key answers 401 authentication_required; a missing scope 403 missing_scope with required_scope and granted_scopes. Rotate keys with POST /openrtb/v2/keys then DELETE /openrtb/v2/keys/{key_id}; keys may carry expires_at. Key management needs the campaigns:write scope, and a key mints or revokes only keys whose scopes are within its own (in sandbox too), so a narrowed key cannot widen itself or lock out a wider one.

## Errors
/openrtb/v2 and /admin/v1 answer \`{success:false, error, error_code, request_id, ...extras}\`; partner-style routes (/v1/*, /inventory/v1/*) answer \`{error:{code, type, message, request_id, docs_url, suggestion, related_endpoints}}\` with code in upper snake case. Every response carries X-Request-Id. Retry 429 after retry_after_seconds; retry 5xx with exponential backoff (1, 2, 4, 8 s, capped at 60 s, up to 5 attempts). The code table is at /docs/errors.

## Rate limits
Every response carries RateLimit-Limit, RateLimit-Remaining and RateLimit-Reset (seconds); 429 adds Retry-After. Windows are fixed and start at a subject's first request. Operators may set custom limits per seat.

${limitsTable()}

## Path and query bounds
Every GET route also answers HEAD: the same status and headers (Content-Length included), no body. A path parameter that is not valid percent-encoded UTF-8 or is longer than ${MAX_PATH_PARAM_LENGTH} characters, and a query value longer than ${MAX_QUERY_VALUE_LENGTH}, answer 400 invalid_parameter naming it, before anything is looked up.

## Idempotency and dry run
Every POST, PUT, PATCH and DELETE takes \`Idempotency-Key\` (1-256 characters, case-sensitive, scoped to the API key or, on routes without a key, to the client address). The first response (2xx, or a 4xx the route itself decided) is stored in the same transaction as the change and replayed for 24 hours with \`Idempotent-Replayed: true\`; the same key with a different method, path, query or body answers 422 idempotency_key_mismatch; a key whose first request is still arriving answers 409 idempotency_key_in_use. \`?dry_run=true\` runs validation, permission, rate-limit and uniqueness checks inside a transaction that is then rolled back, and answers \`{dry_run:true, data, warnings[]}\`; no key is minted and a dry run does not consume an Idempotency-Key.

## Bidding, the waterfall and notices
GET /openrtb/v2/adslots?format=openrtb issues OpenRTB 2.6 bid requests (at 2: the open auction is second price plus 0.01; deals carry at 1 for PMP, 3 for fixed-price Preferred and Guaranteed); POST /openrtb/v2/bid answers them. Stored bids are decided when a screen's player asks for its next spot (POST /embed/{token}/spots): guaranteed placements and Guaranteed deals behind their even daily pace, then Preferred deals, PMP deals (first price), the open auction (one bid per seat, at the floor in force at auction time), guaranteed lines ahead of pace, then the house creative. Every bid is settled exactly once. Notice macros (OpenRTB 2.6 section 4.4): \${AUCTION_ID} (BidResponse.id), \${AUCTION_BID_ID} (BidResponse.bidid, else Bid.id), \${AUCTION_IMP_ID}, \${AUCTION_SEAT_ID}, \${AUCTION_AD_ID}, \${AUCTION_PRICE} (clearing CPM), \${AUCTION_CURRENCY} (USD), \${AUCTION_MBR}, \${AUCTION_LOSS}, \${AUCTION_MIN_TO_WIN}, \${AUCTION_MULTIPLIER} (impressions counted: offered in nurl, confirmed at render in burl), \${AUCTION_IMP_TS} (play time, epoch ms, in burl); unknown macros become empty. nurl fires at the auction, burl when the play completes, lurl with the loss code: 2 expired, 3 invalid, 4 invalid deal, 7 missing markup, 100/101 below auction/deal floor, 102 outbid, 103 lost to a deal or placement, 104 seat blocked, 200/201/202/205/209 creative filtered (general, pending, disapproved, advertiser, category). Bids refused by POST /bid get their lurl too. Pricing (OpenRTB 2.6 DOOH): a play costs CPM / 1000 x multiplier, computed in integer micro-dollars (6 decimals), the declared precision of every price, cost and macro value. Notices are queued durably and retried after 1, 4, 15, 60 and 300 s; only public addresses are called; redirects are not followed.

## Legacy notifications
Seats onboarded with notification_url get a POST on every win and loss of their production bids (schema LegacyNotification): X-Service-Event bid.won or bid.lost, X-Service-Delivery-Id (stable across retries), X-Service-Timestamp, X-Service-Key-Prefix, and X-Service-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 keyed by the API key over "<t>.<raw body>">. Verify with the key named by the prefix, in constant time, and refuse timestamps older than 5 minutes. Keys are sealed with AES-256-GCM to sign; none is stored in the clear.

## Exchanges
Exchanges send OpenRTB 2.6 bid requests to POST /openrtb/bidder/{alias}/bid, configured by the operator under /admin/v1/bidder-aliases: an IP allowlist, optional request signatures (X-Exchange-Signature: t=<unix>,v1=<hex HMAC-SHA256 with the alias secret over "<t>.<raw body>">), a rate limit, a default tmax, notice URLs, seats. The answer is a BidResponse (X-OpenRTB-Version: 2.6) or 204 no-bid; win, loss and billing notices come back to /openrtb/bidder/{alias}/notices/{win,loss,bill} and settle the budget each bid held.

## Reports, market data and forecasts
Events (bid requests issued, bids with their scoring outcome, auctions, renders and plays) are written to a log in the same transaction as the action, then shipped to ClickHouse in batches; reports read hourly rollups. GET /openrtb/v2/analytics/funnel, /reports/summary, /reports/screens, /reports/timeseries (reports:read) cover the calling seat only, over days=1..90 (default 7, ending now) or start_date..end_date (UTC days, start at most 90 days back; beyond it 400 invalid_date). GET /openrtb/v2/market/cpm-benchmarks and /market/demand-analysis (stats:read, days up to 365) are aggregates across seats: a segment with bids from fewer than 3 seats is left out, so no figure reveals one seat. POST /openrtb/v2/forecast (inventory:read) projects impressions, win rate and CPM from the last 7 full days of the matching screens. These answers are computed by ClickHouse and reused for 5 minutes: a query not asked before holds the response until ClickHouse answers (typically 10-100 ms) and answers 200 with the data, generated_at and stale (true while an expired answer is being recomputed; X-Cache says fresh or stale). Should ClickHouse take longer than REPORT_WAIT_MS (default 10 s), the answer is 202 {status: "pending", retry_after_seconds: 1} with Retry-After: ask again. These routes hold their response while they wait, so they do not support HTTP pipelining; the hot paths (bid, adslots, the bidder endpoint, the player feed, impression intake) answer synchronously and do. 503 service_unavailable with Retry-After means ClickHouse cannot be reached; events keep waiting in the log and nothing is lost. GET /openrtb/v2/stats never waits: its counters are real time, and its delivery block (from ClickHouse) says ready, pending or unavailable.

## Proof of play
Every completed play of a creative gets a proof signed with the service's Ed25519 key (GET /v1/advertiser/proof/.well-known/public-key, 32 bytes hex) over the text v2.<timestamp>.<adId>.<impressionId>.<screenId>.<deviceId>, as signature ed25519=<hex>. POST /v1/advertiser/proof/verify-proof needs no key and answers {success, verification:{valid, version}}; a malformed signature is valid: false, a body without the six fields 400. GET /v1/advertiser/proof/proofs and /proofs/{id} need the seat's key (scope proof:read) and show the seat's own proofs, oldest first, with from/to (epoch ms), screen_id, tier, limit and cursor. Each screen's proofs form a hash chain: chain.digest = hex SHA-256 of "<chain.prev_digest>\n<payload>\n<signature>", 64 zeros before a screen's first proof. GET /openrtb/v2/campaigns/{id}/proofs exports a campaign's proofs with each screen's chain between them (other buyers' links redacted to their digests) and the public key; schema ProofExport gives the offline verification procedure. Players that speak VAST call GET /embed/{token}/vast (the embed_url plus /vast) for each slot: a VAST 4.2 InLine ad from the same waterfall, whose start tracking records the render and whose complete bills the spot and signs its proof at tier event_confirmed; an empty VAST when nothing plays. GET /openrtb/v2/proof-of-play (proof:read) takes start_date and end_date (UTC days, at most 90 apart) and answers the counts per tier (signed, event_confirmed, impression_callback), the GIVT pass rate with the count per rule, and a page of the records (tier, screen_id, limit, cursor). POST /v1/partner/impressions (partner key) takes up to 1000 plays a device reports (ImpressionItem: adId, impressionId, deviceId, duration in seconds, completed, timestamp in epoch ms) and answers per item: accepted with proof_id (tier impression_callback), duplicate (the impressionId already has a proof of a play on one of the partner's screens, which is returned: retries are safe) or rejected (an impressionId taken by a play on another partner's screen is ALREADY_EXISTS, and nothing of that play is shown) with the error code a single item would get. Plays made while a device was offline are accepted with their original timestamps up to 72 hours back. Webhook events for the buyer's seat: impression.verified when the service's own player or a VAST complete proves a play; impression.delivered when a partner's impression callback reports one, with partner_id, partner_impressions_today (the partner's count for that UTC day) and reconciled (true when the callback matches a play the service had already proved, announced once; false for a play known only from the callback). data.object (schema ImpressionEvent) also carries proof_id, impression_id, ad_id, screen_id, device_id, timestamp, verification_tier, duration_ms, completed, givt_passed and signature. A repeated impression id gets no second proof and counts as givt.reasons.duplicate_impression in GET /openrtb/v2/proof-of-play. givt flags plays longer than the slot, outside the screen's operating hours (screen_offline), impossibly short, or within one slot of another play on the screen (burst).

Partners: GET /v1/partner/analytics (data.partner.total_impressions, total_revenue_cents: gross buyer spend on the partner's screens in whole cents) and GET /v1/partner/earnings (per UTC day and per screen), over start_date..end_date (UTC days, at most 90 back; default the last 7 days), answered from ClickHouse like the reports (200 once computed; 202 pending past REPORT_WAIT_MS).

## Webhooks
POST /openrtb/v2/webhooks subscribes an https URL on a public host to events (impression.delivered, impression.verified, campaign.allocated, campaign.started, campaign.completed, creative.moderation.completed, screen.online, screen.offline) and returns its whsec_ secret once; GET lists the seat's subscriptions without secrets, with their health (last_success_at, failing_since); DELETE removes one and cancels what is queued for it (404 webhook_not_found when unknown or another seat's). At most 10 active per seat (409 webhook_limit_reached). Events go to the seat that owns the subject: screen.online and screen.offline to the seats whose assignments play on the screen; deal changes to the proposing and invited seats.

Delivery: an https POST with Content-Type application/json and the body {event, delivered_at, data: {event_id, occurred_at, object}} (schema WebhookPayload; x-webhooks documents each event's data.object). Headers: X-Service-Event, X-Service-Delivery-Id (del_..., the same on every attempt), X-Service-Timestamp (unix seconds of the attempt), X-Service-Attempt, X-Service-Webhook-Id, and X-Service-Signature: t=<unix seconds>,v0=<hex>,v1=<hex>. Verify v1 as any Stripe-style verifier does: hex HMAC-SHA256 keyed by the whsec_ secret over "<t>.<raw body>", compared in constant time, refused when t is more than 300 seconds from now (the reference handler answers 401). v0 is hex HMAC-SHA256 over "<t>.<delivery id>.<raw body>": it also binds X-Service-Delivery-Id, for receivers that deduplicate on it. Each attempt is signed afresh, so a retry days later still verifies.

Acknowledge with any 2xx within 5 seconds (WEBHOOK_TIMEOUT_MS); redirects are not followed. Anything else is retried after ${retrySchedule()} (each +-20%): ten attempts over about 2.6 days. Deliveries are at least once and not ordered: deduplicate on X-Service-Delivery-Id (or data.event_id), order by data.occurred_at. A delivery is queued in the same transaction that advances the dispatcher past its event, and deleted only once answered, so a restart (kill -9 included) loses nothing; only an attempt cut short by a crash is sent again, with the same delivery id. A subscription whose delivery runs out of retries with no success since that delivery was created is disabled (status disabled, disabled_at, disabled_reason) and its queued deliveries canceled; the seat's webhook_url gets webhook.disabled. Hosts are checked again when connecting, on every address the name resolves to (DNS rebinding): private, loopback, link-local and reserved addresses are refused.

GET /openrtb/v2/webhooks/deliveries shows the last 7 days of deliveries, failures included, with every attempt (status, duration, error), filtered by webhook_id (webhook_url for those to the onboarding webhook_url), event, status, since and until, newest first, paged with limit and cursor.

The webhook_url given at onboarding receives the general events without subscribing (schema GeneralEventType: creative moderation results, campaign updates including campaign.paused and campaign.resumed, deal status changes, webhook.disabled) the same way, signed with the seat's API key instead of a whsec_ secret: X-Service-Key-Prefix names the key, and v1 is HMAC-SHA256 keyed by that key over "<t>.<raw body>", as for legacy notifications.

## Screen player
A device's embed_url (GET /embed/{token}?fp=<device fingerprint>) is the player page: one small HTML page that plays the screen's feed full screen, one spot per slot (POST /embed/{token}/spots), reports render_started and play_completed (billing, notices, proof of play), heartbeats (POST /embed/{token}/heartbeat, every heartbeat_seconds) and leaves when closed (POST /embed/{token}/leave: offline at once). The first fp binds the screen to that device; another is 409 device_mismatch until the partner calls DELETE /v1/partner/devices/{device_id}/player. When the feed cannot be reached the page replays the last five creatives it played, unbilled, and sends the reports it owes when the feed returns. In the page, window dispatches service:ad_started (detail: type image, video or html; spot_id, creative_id, tier, duration_seconds, offline), service:ad_ended (spot_id, creative_id, completed, duration_ms, offline) and service:overlay_clicked (spot_id, creative_id, click_url); window.oohbid offers hide() (a spot cut short is not counted; nothing plays until show()), show() and status().

## Discovery
/sellers.json (IAB sellers.json 1.0), /app-ads.txt and /ads.txt (301 to /app-ads.txt) are public and cached 24 hours; this document is cached 5 minutes.`

/** What each tag groups, for readers of the rendered document. */
const TAG_DESCRIPTIONS: Record<string, string> = {
  Accounts: 'Seat onboarding, the seat record and API keys.',
  Agents: 'AI buying agents: the AdCP media-buy tasks as tools of an MCP server (POST /mcp, keys with mcp:tools).',
  Bidding: 'OpenRTB 2.6 bid responses (POST /bid) and the seat\'s real-time bidding statistics.',
  Campaigns: 'Campaigns and direct placements (assignments) of approved creatives on screens.',
  Creatives: 'Creative registration (URL or presigned upload) and its AI moderation.',
  Deals: 'PMP, Preferred and Guaranteed deals: proposals, offers and lookups.',
  Discovery: 'This document, sellers.json, app-ads.txt and ads.txt: public, no key.',
  Exchange: 'The bidder endpoint exchanges post OpenRTB 2.6 bid requests to, and their notices.',
  Inventory: 'Screens with live FEIN audience signals, as lists, OpenRTB bid requests, profiles, availability, search and forecasts.',
  Operations: 'Health, readiness and Prometheus metrics.',
  Operator: 'The operator\'s administration API (operator token): seats, keys, deals, reviews, exchanges, audit.',
  Partner: 'The device-operator API: registration, devices, heartbeats, audience, impressions, earnings.',
  Player: 'The screen player: its page, spot feed, events and VAST.',
  'Proof of play': 'Ed25519-signed proofs of play and their verification.',
  Reporting: 'Funnel, delivery reports, market figures and proof-of-play counts, from ClickHouse.',
  Reservations: 'Holds on screen capacity for 15 minutes, confirmed into placements.',
  Webhooks: 'Webhook subscriptions, their delivery log, and (x-webhooks) every event sent.'
}

/** Assembles the OpenAPI 3.0 document from the route table and schemas/. */
export function buildOpenApi (routes: RouteDef[], baseUrl: string): Json {
  const paths: Record<string, Json> = {}
  for (const route of routes) {
    if (route.documented === false) continue
    const path = route.path.replace(/:(\w+)/g, '{$1}')
    paths[path] ??= {}
    paths[path]![route.method] = operation(route)
  }
  const componentSchemas = Object.fromEntries(Object.values(schemas).map((s) => [s.title, toOpenApiSchema(s)]))
  return {
    openapi: '3.0.3',
    info: { title: 'oohbid', version: VERSION, description: DESCRIPTION, license: { name: 'Apache-2.0', url: 'https://www.apache.org/licenses/LICENSE-2.0' } },
    servers: [{ url: baseUrl }],
    tags: [...new Set(routes.filter((r) => r.documented !== false).map((r) => r.tag))].map((name) => ({ name, description: TAG_DESCRIPTIONS[name] ?? name })),
    paths,
    components: {
      schemas: componentSchemas,
      securitySchemes: {
        bearerAuth: { type: 'http', scheme: 'bearer', description: 'API key as a bearer token.' },
        apiKeyHeader: { type: 'apiKey', in: 'header', name: 'x-api-key' },
        adminToken: { type: 'http', scheme: 'bearer', description: 'The operator token (ADMIN_TOKEN).' }
      },
      parameters: {
        DryRun: { name: 'dry_run', in: 'query', required: false, description: 'true: check everything, persist nothing.', schema: { type: 'boolean', default: false } },
        IdempotencyKey: { name: 'Idempotency-Key', in: 'header', required: false, description: 'Replays the first response for 24 hours.', schema: { type: 'string', minLength: 1, maxLength: 256 } }
      },
      headers: {
        XRequestId: { description: 'req_<uuid>; quote it to support.', schema: { type: 'string' } },
        RateLimitLimit: { description: 'Requests allowed in the current window of the route\'s rate group.', schema: { type: 'integer' } },
        RateLimitRemaining: { description: 'Requests left in the window.', schema: { type: 'integer' } },
        RateLimitReset: { description: 'Seconds until the window resets.', schema: { type: 'integer' } },
        RetryAfter: { description: 'With 429: seconds until the rate window resets. With 503 on a cluster node: seconds to wait before retrying (a draining node sends none).', schema: { type: 'integer' } }
      }
    },
    security: [{ bearerAuth: [] }, { apiKeyHeader: [] }],
    'x-webhooks': webhookDocs()
  }
}
