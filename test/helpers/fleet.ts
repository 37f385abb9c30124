import { freshIp, type TestService } from './service.js'

/** A partner registered over HTTP, with its key. */
export interface TestPartner {
  id: string
  key: string
  slug: string
}

let partnerSeq = 0

export async function registerPartner (svc: TestService, partnerType = 'screen_operator'): Promise<TestPartner> {
  const slug = `partner-${++partnerSeq}-${partnerType.replace('_', '-')}`
  const r = await svc.request('POST', '/v1/partner/register', { body: { name: `Partner ${partnerSeq}`, slug, contact_email: `ops@${slug}.example`, partner_type: partnerType, domain: `${slug}.example` }, headers: { 'x-forwarded-for': freshIp() } })
  if (r.status !== 201) throw new Error(`partner registration failed: ${r.text}`)
  return { id: r.body.data.partner.id, key: r.body.data.api_key.key, slug }
}

/** A device body with sensible defaults; override anything. */
export function deviceBody (id: string, over: Record<string, any> = {}): Record<string, any> {
  const { location, display, ...rest } = over
  return {
    device_id: id,
    name: `Screen ${id}`,
    display: { width: 1920, height: 1080, ...display },
    location: { lat: 30.2672, lng: -97.7431, venue_type: 'gym', city: 'Austin', state: 'TX', country: 'US', ...location },
    capabilities: { fein: true },
    ...rest
  }
}

/** Registers devices for a partner and returns their screen ids by device id. */
export async function registerDevices (svc: TestService, partner: TestPartner, bodies: Array<Record<string, any>>): Promise<Record<string, string>> {
  const r = await svc.request('POST', '/v1/partner/devices/batch', { key: partner.key, body: { devices: bodies } })
  if (r.status !== 200 || r.body.data.rejected > 0) throw new Error(`device batch failed: ${r.text.slice(0, 500)}`)
  return Object.fromEntries(r.body.data.results.map((x: { device_id: string, screen_id: string }) => [x.device_id, x.screen_id]))
}

/** Sends FEIN updates for a partner's devices. */
export async function sendAudience (svc: TestService, partner: TestPartner, updates: Array<Record<string, unknown>>): Promise<any> {
  const r = await svc.request('POST', '/v1/partner/audience', { key: partner.key, body: { updates } })
  if (r.status !== 200) throw new Error(`audience failed: ${r.text.slice(0, 500)}`)
  return r.body.data
}

/** A buyer seat with limits high enough for a test to page freely. */
export async function buyer (svc: TestService, seatId = 'buyer'): Promise<string> {
  const { key } = await svc.onboard(seatId)
  await svc.admin('PUT', `/admin/v1/seats/${seatId}/rate-limits`, { limits: { inventory: 100000, account: 100000 } })
  return key
}
