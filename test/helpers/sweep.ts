import { approvedCreative } from './creatives.js'
import { freshIp, type TestService } from './service.js'

// What the route sweeps share (bad input, dry runs, the fuzzer): one seat, partner, device, creative, campaign,
// reservation, deal, alias, spot and webhook, the route paths filled with their ids, and a valid body per mutating route.

export type SweepFixtures = Awaited<ReturnType<typeof fixtures>>

/** The error code of an answer in either envelope, flat (error_code) or nested (error.code, upper snake). */
export function codeOf (envelope: 'flat' | 'nested', body: any): string | undefined {
  return envelope === 'nested' ? body?.error?.code?.toLowerCase() : body?.error_code
}

/** The parameter an error names, in either envelope. */
export function paramOf (envelope: 'flat' | 'nested', body: any): string | undefined {
  return envelope === 'nested' ? body?.error?.param : body?.param
}

/** A route path with its parameters set to the fixtures' ids. */
export function fill (path: string, f: SweepFixtures, keyId = f.keyId): string {
  return path.replace(':alias', 'sweep-exchange').replace(':thread', '1').replace('/embed/:token', `/embed/${f.embedToken}`).replace(':spot_id', f.spotId).replace(':creative_id', f.creativeId).replace(':seat_id', 'sweep').replace(':key_id', keyId).replace(':device_id', 'sweep-dev').replace(':token', f.uploadToken).replace(':dealId', f.dealId)
    .replace('/partners/:id', `/partners/${f.partnerId}`).replace('/creatives/:id', `/creatives/${f.creativeId}`)
    .replace('/campaigns/:id', `/campaigns/${f.campaignId}`).replace('/reservations/:id', `/reservations/${f.reservationId}`).replace('/webhooks/:id', `/webhooks/${f.webhookId}`).replace(':id', f.screenId)
}

export async function fixtures (svc: TestService) {
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
  // A decision with nothing to play records no spot: the house creative gives the events route one to report on.
  await svc.admin('PUT', '/admin/v1/settings', { house_creative_id: approved })
  const spot = (await svc.request('POST', `/embed/${embedToken}/spots`, { body: {} })).body.data
  const webhook = (await svc.request('POST', '/openrtb/v2/webhooks', { key, body: { url: 'https://hooks.sweep.example/x', events: ['screen.offline'] } })).body.data.webhook
  return { webhookId: webhook.webhook_id as string, embedToken, spotId: spot.spot_id as string, seatKey: key as string, keyId: keyId as string, partnerKey, partnerId: partner.body.data.partner.id as string, screenId: device.body.data.screen_id as string, creativeId: creative.creative_id as string, uploadToken, approvedCreativeId: approved, campaignId: campaign.campaign_id as string, reservationId: reservation.reservation_id as string, dealId: deal.deal_id as string }
}

/**
 * A valid body for every mutating route, by 'METHOD /path' (undefined: the route takes none; null: it needs a state the
 * sweep does not make, and its own tests cover it).
 */
export function validBodies (f: SweepFixtures): Record<string, unknown> {
  return {
    'POST /openrtb/v2/onboard': { company_name: 'Dry Co', seat_id: 'dry_sweep', contact_email: 'd@dry.example' },
    'POST /openrtb/v2/keys': { label: 'dry' },
    'POST /mcp': { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'get_adcp_capabilities', arguments: {} } },
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
    'POST /admin/v1/hot-threads/:thread/end': undefined,
    'DELETE /admin/v1/bidder-aliases/:alias': undefined,
    'POST /openrtb/bidder/:alias/bid': { id: 'dry-req', imp: [{ id: '1', banner: { w: 1920, h: 1080 }, bidfloor: 1 }] },
    'POST /openrtb/v2/forecast': { budget_usd: 100, targeting: { venue_type: 'gym' } },
    'POST /openrtb/v2/webhooks': { url: 'https://hooks.sweep.example/dry', events: ['screen.online'] },
    'DELETE /openrtb/v2/webhooks/:id': undefined,
    'POST /v1/partner/impressions': { impressions: [{ adId: f.approvedCreativeId, impressionId: 'dry-1', deviceId: 'sweep-dev', duration: 15, completed: true, timestamp: Date.now() }] },
    'POST /v1/advertiser/proof/verify-proof': { signature: 'ed25519=00', timestamp: 1, adId: 'a', impressionId: 'i', screenId: 's', deviceId: 'd' }
  }
}
