import t from 'tap'
import { isMutating } from '../src/http/route.js'
import { approvedCreative } from './helpers/creatives.js'
import { freshIp, startTestService, type TestService } from './helpers/service.js'

// Every route of the table, driven with bad input: the right code and status in the route's envelope, nothing
// written, and the service still serving afterwards.

function codeOf (envelope: 'flat' | 'nested', body: any): string | undefined {
  return envelope === 'nested' ? body?.error?.code?.toLowerCase() : body?.error_code
}

/** A route path with its parameters set to the fixtures' ids. */
function fill (path: string, f: { keyId: string, screenId: string, partnerId: string, creativeId: string, uploadToken: string, campaignId: string, reservationId: string, dealId: string, embedToken: string, spotId: string, webhookId: string }, keyId = f.keyId): string {
  return path.replace(':alias', 'sweep-exchange').replace('/embed/:token', `/embed/${f.embedToken}`).replace(':spot_id', f.spotId).replace(':creative_id', f.creativeId).replace(':seat_id', 'sweep').replace(':key_id', keyId).replace(':device_id', 'sweep-dev').replace(':token', f.uploadToken).replace(':dealId', f.dealId)
    .replace('/partners/:id', `/partners/${f.partnerId}`).replace('/creatives/:id', `/creatives/${f.creativeId}`)
    .replace('/campaigns/:id', `/campaigns/${f.campaignId}`).replace('/reservations/:id', `/reservations/${f.reservationId}`).replace('/webhooks/:id', `/webhooks/${f.webhookId}`).replace(':id', f.screenId)
}

async function fixtures (svc: TestService) {
  const { key } = await svc.onboard('sweep')
  const keyId = (await svc.request('GET', '/openrtb/v2/seat', { key })).body.data.key.key_id
  const partner = await svc.request('POST', '/v1/partner/register', { body: { name: 'Sweep Screens', slug: 'sweep', contact_email: 'ops@sweep.example', partner_type: 'network' }, headers: { 'x-forwarded-for': freshIp() } })
  const partnerKey = partner.body.data.api_key.key as string
  const device = await svc.request('POST', '/v1/partner/device', { key: partnerKey, body: { device_id: 'sweep-dev', name: 'Sweep screen', display: { width: 1920, height: 1080 }, location: { lat: 30.2672, lng: -97.7431, venue_type: 'gym' }, capabilities: { fein: true } } })
  const creative = (await svc.request('POST', '/openrtb/v2/creatives', { key, body: { name: 'Sweep ad', content_type: 'image/png', mode: 'upload' } })).body.data
  const uploadToken = new URL(creative.upload.url).pathname.split('/').pop() as string
  await svc.request('PUT', `/uploads/${uploadToken}`, { raw: 'not really a png', headers: { 'content-type': 'image/png' } })
  const approved = await approvedCreative(svc, key)
  const today = new Date(svc.clock.now()).toISOString().slice(0, 10)
  const campaign = (await svc.request('POST', '/openrtb/v2/campaigns', { key, body: { creative_id: approved, name: 'Sweep campaign', budget_usd: 100, start_date: today, end_date: today } })).body.data
  const reservation = (await svc.request('POST', '/openrtb/v2/reservations', { key, body: { screen_ids: [device.body.data.screen_id], start_date: today, end_date: today, spots_per_day: 1 } })).body.data
  const deal = (await svc.request('POST', '/openrtb/v2/deals/propose', { key, body: { deal_id: 'sweep-deal', type: 'PMP', floor_cpm: 2, start_date: today, end_date: today } })).body.data
  const embedToken = new URL(device.body.data.embed_url).pathname.split('/').pop() as string
  await svc.admin('PUT', '/admin/v1/bidder-aliases/sweep-exchange', { name: 'Sweep Exchange', ip_allowlist: ['127.0.0.1', '198.51.0.0/16'] })
  const spot = (await svc.request('POST', `/embed/${embedToken}/spots`, { body: {} })).body.data
  const webhook = (await svc.request('POST', '/openrtb/v2/webhooks', { key, body: { url: 'https://hooks.sweep.example/x', events: ['screen.offline'] } })).body.data.webhook
  return { webhookId: webhook.webhook_id as string, embedToken, spotId: spot.spot_id as string, seatKey: key as string, keyId: keyId as string, partnerKey, partnerId: partner.body.data.partner.id as string, screenId: device.body.data.screen_id as string, creativeId: creative.creative_id as string, uploadToken, approvedCreativeId: approved, campaignId: campaign.campaign_id as string, reservationId: reservation.reservation_id as string, dealId: deal.deal_id as string }
}

t.test('every route with a body refuses bad bodies with its envelope and writes nothing', async (t) => {
  const svc = await startTestService(t)
  const f = await fixtures(svc)
  const creds: Record<string, string | undefined> = { seat: f.seatKey, key: f.seatKey, partner: f.partnerKey, admin: svc.adminToken, none: undefined, 'optional-key': undefined }
  const routes = svc.service.routes.filter((r) => r.body !== undefined)
  t.ok(routes.length >= 10, `${routes.length} routes take a body`)
  for (const route of routes) {
    const path = fill(route.path, f)
    const name = `${route.method.toUpperCase()} ${route.path}`
    const send = (raw: string, contentType = 'application/json', extra: Record<string, string> = {}) => svc.request(route.method.toUpperCase(), path, {
      raw,
      headers: { 'content-type': contentType, 'x-forwarded-for': freshIp(), ...extra },
      ...(creds[route.auth] !== undefined ? { key: creds[route.auth]! } : {})
    })
    const before = svc.snapshot()
    const cases: Array<[string, () => ReturnType<typeof send>, number, string[]]> = [
      ['malformed JSON', () => send('{"a":'), 400, ['invalid_json', 'invalid_bid_response', 'invalid_bid_request']],
      ['not JSON', () => send('a=1', 'application/x-www-form-urlencoded'), 415, ['unsupported_media_type']],
      ['an array', () => send('[]'), 400, ['invalid_parameter', 'invalid_bid_response', 'invalid_bid_request']],
      ['an unknown field', () => send('{"__bogus":1}'), 400, ['invalid_parameter', 'missing_required_field', 'missing_name', 'missing_content_type', 'invalid_bid_response', 'invalid_bid_request']],
      ['a wrong type', () => send('{"name":7,"company_name":7,"scopes":"all","limits":[],"reason":7,"label":7}'), 400, ['invalid_parameter', 'missing_required_field', 'missing_content_type', 'invalid_bid_response', 'invalid_bid_request']],
      ['an oversized Idempotency-Key', () => send('{"id":"x"}', 'application/json', { 'idempotency-key': 'k'.repeat(300) }), 400, ['invalid_idempotency_key']]
    ]
    for (const [what, go, status, codes] of cases) {
      const r = await go()
      t.equal(r.status, status, `${name}, ${what}: ${status}`)
      const code = codeOf(route.envelope, r.body) ?? ''
      // A route may name the missing field in its own code (missing_name, missing_creative_id, ...).
      t.ok(codes.includes(code) || (codes.includes('missing_required_field') && code.startsWith('missing_')), `${name}, ${what}: ${code} in ${codes.join('|')}`)
      t.match(r.headers.get('x-request-id'), /^req_/)
    }
    t.same(svc.snapshot(), before, `${name}: nothing written`)
  }
  t.equal((await svc.request('GET', '/healthz')).status, 200, 'still serving')
})

t.test('every authenticated route refuses a missing credential with 401 in its envelope', async (t) => {
  const svc = await startTestService(t)
  const before = svc.snapshot()
  for (const route of svc.service.routes.filter((r) => r.auth !== 'none' && r.auth !== 'optional-key')) {
    const path = route.path.replace(/:(\w+)/g, 'x')
    const r = await svc.request(route.method.toUpperCase(), path, { headers: { 'x-forwarded-for': freshIp() }, ...(route.body ? { body: {} } : {}) })
    t.equal(r.status, 401, `${route.method.toUpperCase()} ${route.path}`)
    t.equal(codeOf(route.envelope, r.body), 'authentication_required')
    if (isMutating(route.method)) t.same(svc.snapshot(), before)
  }
})

t.test('every mutating route honours ?dry_run=true: the real checks run, nothing persists', async (t) => {
  const svc = await startTestService(t)
  const f = await fixtures(svc)
  const mint = await svc.request('POST', '/openrtb/v2/keys', { key: f.seatKey, body: { label: 'spare' } })
  const spareId = mint.body.data.key_id
  const valid: Record<string, unknown> = {
    'POST /openrtb/v2/onboard': { company_name: 'Dry Co', seat_id: 'dry_sweep', contact_email: 'd@dry.example' },
    'POST /openrtb/v2/keys': { label: 'dry' },
    'DELETE /openrtb/v2/keys/:key_id': undefined,
    'POST /v1/partner/register': { name: 'Dry Screens', slug: 'dry-screens', contact_email: 'd@dry.example', partner_type: 'network' },
    'POST /v1/partner/agent/register': { name: 'dry agent' },
    'POST /admin/v1/seats/:seat_id/approve': { reason: 'dry' },
    'POST /admin/v1/seats/:seat_id/suspend': {},
    'POST /admin/v1/seats/:seat_id/reinstate': null,
    'POST /admin/v1/seats/:seat_id/revoke': {},
    'PUT /admin/v1/seats/:seat_id/rate-limits': { limits: { bidding: 5000 } },
    'PATCH /admin/v1/keys/:key_id': { scopes: ['inventory:read'] },
    'POST /admin/v1/keys/:key_id/revoke': {},
    'POST /openrtb/v2/screens/availability': { screen_ids: [f.screenId], start_date: '2026-12-01', end_date: '2026-12-07' },
    'POST /openrtb/v2/screens/audience': { screen_ids: [f.screenId] },
    'POST /openrtb/v2/discover': { query: 'busy gyms in Austin' },
    'POST /v1/partner/device': { device_id: 'dry-dev', name: 'Dry screen', display: { width: 1280, height: 720 }, location: { lat: 51.5, lng: -0.12, venue_type: 'bar' } },
    'POST /v1/partner/devices/batch': { devices: [{ device_id: 'dry-1', name: 'Dry 1', display: { width: 1280, height: 720 }, location: { lat: 51.5, lng: -0.12, venue_type: 'bar' } }] },
    'POST /v1/partner/devices/:device_id/heartbeat': {},
    'POST /v1/partner/heartbeats': { heartbeats: [{ device_id: 'sweep-dev' }] },
    'POST /v1/partner/audience': { updates: [{ device_id: 'sweep-dev', live_face_count: 4, attention_score: 0.5 }] },
    'PATCH /v1/partner/screens/:id': { floor_price_cpm: 9.5 },
    'PUT /admin/v1/settings': { partner_display: true },
    'PUT /admin/v1/partners/:id/source': { source: 'partner' },
    'POST /openrtb/v2/creatives': { name: 'Dry ad', content_type: 'image/png', creative_url: 'https://cdn.example.com/dry.png' },
    'POST /openrtb/v2/creatives/:id/confirm': undefined,
    'PUT /uploads/:token': null, // a raw body; its dry run is checked below
    'POST /admin/v1/creatives/:id/review': null, // needs a creative in needs_review; covered by the creatives tests
    'POST /openrtb/v2/campaigns': { creative_id: f.approvedCreativeId, name: 'Dry campaign', budget_usd: 50, start_date: '2099-01-01', end_date: '2099-01-02' },
    'POST /openrtb/v2/campaigns/:id/pause': {},
    'POST /openrtb/v2/campaigns/:id/resume': null, // needs a paused campaign; covered by the campaigns tests
    'POST /openrtb/v2/campaigns/assign': { creative_id: f.approvedCreativeId, screen_ids: [f.screenId], start_date: '2099-01-01', end_date: '2099-01-01' },
    'POST /openrtb/v2/reservations': { screen_ids: [f.screenId], start_date: '2099-01-01', end_date: '2099-01-01', spots_per_day: 5 },
    'POST /openrtb/v2/reservations/:id/confirm': { creative_id: f.approvedCreativeId },
    'DELETE /openrtb/v2/reservations/:id': undefined,
    'POST /openrtb/v2/deals/propose': { type: 'PMP', floor_cpm: 3, start_date: '2099-01-01', end_date: '2099-01-02' },
    'POST /admin/v1/deals/:dealId/approve': {},
    'POST /admin/v1/deals/:dealId/reject': { reason: 'dry' },
    'POST /admin/v1/deals/:dealId/pause': null, // needs an active deal; covered by the campaigns tests
    'POST /admin/v1/deals/:dealId/resume': null,
    'POST /openrtb/v2/bid': { id: 'dry', seatbid: [{ bid: [{ id: 'b', impid: 'not-issued', price: 5, adm: 'x', crid: f.approvedCreativeId }] }] },
    'POST /embed/:token/spots': {},
    'POST /embed/:token/heartbeat': { fp: 'dry-fp' },
    'POST /embed/:token/leave': {},
    'DELETE /v1/partner/devices/:device_id/player': undefined,
    'POST /embed/:token/spots/:spot_id/events': { event: 'play_completed' },
    'PUT /admin/v1/bidder-aliases/:alias': { name: 'Dry Exchange', ip_allowlist: ['10.0.0.0/8'] },
    'POST /admin/v1/bidder-aliases/:alias/rotate-secret': undefined,
    'DELETE /admin/v1/bidder-aliases/:alias': undefined,
    'POST /openrtb/bidder/:alias/bid': { id: 'dry-req', imp: [{ id: '1', banner: { w: 1920, h: 1080 }, bidfloor: 1 }] },
    'POST /openrtb/v2/forecast': { budget_usd: 100, targeting: { venue_type: 'gym' } },
    'POST /openrtb/v2/webhooks': { url: 'https://hooks.sweep.example/dry', events: ['screen.online'] },
    'DELETE /openrtb/v2/webhooks/:id': undefined,
    'POST /v1/partner/impressions': { impressions: [{ adId: f.approvedCreativeId, impressionId: 'dry-1', deviceId: 'sweep-dev', duration: 15, completed: true, timestamp: Date.now() }] },
    'POST /v1/advertiser/proof/verify-proof': { signature: 'ed25519=00', timestamp: 1, adId: 'a', impressionId: 'i', screenId: 's', deviceId: 'd' }
  }
  const creds: Record<string, string | undefined> = { seat: f.seatKey, partner: f.partnerKey, admin: svc.adminToken }
  const mutating = svc.service.routes.filter((r) => isMutating(r.method))
  for (const route of mutating) {
    const name = `${route.method.toUpperCase()} ${route.path}`
    t.ok(name in valid, `${name} has a dry-run case here`)
    if (valid[name] === null) continue // reinstate needs a suspended seat; covered by its transition test
    const before = svc.snapshot()
    const path = fill(route.path, f, spareId)
    const r = await svc.request(route.method.toUpperCase(), `${path}?dry_run=true`, {
      headers: { 'x-forwarded-for': freshIp() },
      ...(valid[name] !== undefined ? { body: valid[name] } : {}),
      ...(creds[route.auth] !== undefined ? { key: creds[route.auth]! } : {})
    })
    t.equal(r.status, 200, `${name}: 200`)
    t.equal(r.body.dry_run, true, `${name}: dry_run`)
    t.type(r.body.warnings, Array)
    t.same(svc.snapshot(), before, `${name}: nothing persisted`)
  }
  t.equal((await svc.request('GET', '/openrtb/v2/seat', { key: f.seatKey })).body.data.seat.status, 'sandbox', 'the seat was not moved')
  const keys = await svc.request('GET', '/openrtb/v2/keys', { key: f.seatKey })
  t.ok(keys.body.data.keys.every((k: { revoked_at: string | null }) => k.revoked_at === null), 'no key was revoked')
  const before = svc.snapshot()
  const upload = await svc.request('PUT', `/uploads/${f.uploadToken}?dry_run=true`, { raw: 'other bytes', headers: { 'content-type': 'image/png' } })
  t.match(upload.body, { dry_run: true, data: { bytes: 11 } })
  t.same(svc.snapshot(), before, 'a dry-run upload stores nothing')
  t.equal((await svc.request('GET', `/openrtb/v2/creatives/${f.creativeId}`, { key: f.seatKey })).body.data.asset.bytes, 16, 'the earlier upload is untouched')
})
