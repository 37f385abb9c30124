// What the webhook and player benchmarks set up before they measure, through the public API as users would.

/** A JSON call to the service: the data of its answer's envelope (the whole body when it failed). */
export type Call = (path: string, init?: { method?: string, key?: string, body?: unknown }) => Promise<any>

/** JSON over HTTP to a benchmark's service; `key` is sent as the bearer token. */
export function jsonClient (base: string): Call {
  return (path, init = {}) => fetch(base + path, {
    method: init.method ?? 'GET',
    headers: { 'content-type': 'application/json', ...(init.key !== undefined ? { authorization: `Bearer ${init.key}` } : {}) },
    ...(init.body !== undefined ? { body: JSON.stringify(init.body) } : {})
  }).then((r) => r.json()).then((json: any) => json.success === true ? json.data : json)
}

/** A partner with one screen (bench-1, a gym in Austin with FEIN): the partner's key, the screen and its player's embed_url. */
export async function benchScreen (call: Call): Promise<{ partnerKey: string, screenId: string, embedUrl: string }> {
  const partner = await call('/v1/partner/register', { method: 'POST', body: { name: 'Bench Screens', slug: 'bench-screens', contact_email: 'ops@bench.example', partner_type: 'screen_operator', domain: 'benchscreens.example' } })
  const partnerKey = partner.api_key.key as string
  const device = { device_id: 'bench-1', name: 'Bench 1', display: { width: 1920, height: 1080 }, location: { lat: 30.2672, lng: -97.7431, venue_type: 'gym', city: 'Austin', state: 'TX', country: 'US' }, capabilities: { fein: true } }
  const [result] = (await call('/v1/partner/devices/batch', { method: 'POST', key: partnerKey, body: { devices: [device] } })).results
  return { partnerKey, screenId: result.screen_id, embedUrl: result.embed_url }
}

/** A partner of its own with count screens (gyms in Austin): their ids, for bookings spread over many screens. */
export async function benchScreens (call: Call, count: number): Promise<string[]> {
  const partner = await call('/v1/partner/register', { method: 'POST', body: { name: 'Bench Bookings', slug: 'bench-bookings', contact_email: 'ops@bookings.example', partner_type: 'screen_operator', domain: 'benchbookings.example' } })
  const devices = Array.from({ length: count }, (_, i) => ({ device_id: `booked-${i}`, name: `Booked ${i}`, display: { width: 1920, height: 1080 }, location: { lat: 30.2672, lng: -97.7431, venue_type: 'gym', city: 'Austin', state: 'TX', country: 'US' } }))
  const { results } = await call('/v1/partner/devices/batch', { method: 'POST', key: partner.api_key.key, body: { devices } }) as { results: Array<{ screen_id: string }> }
  return results.map((r) => r.screen_id)
}

/**
 * An approved creative (with any other creative fields given): the PNG uploaded and moderated, or without one a URL
 * that fails at once; approved on review by the operator when moderation did not approve it.
 */
export async function benchCreative (call: Call, key: string, adminToken: string, { png, fields = {} }: { png?: Buffer, fields?: Record<string, unknown> } = {}): Promise<string> {
  const created = await call('/openrtb/v2/creatives', { method: 'POST', key, body: { name: 'Bench ad', content_type: 'image/png', ...(png !== undefined ? { mode: 'upload' } : { creative_url: 'https://assets.invalid/bench.png' }), ...fields } })
  const id = created.creative_id as string
  if (png !== undefined) {
    await fetch(created.upload.url, { method: 'PUT', headers: { 'content-type': 'image/png' }, body: png })
    await call(`/openrtb/v2/creatives/${id}/confirm`, { method: 'POST', key })
  }
  let status = 'pending_moderation'
  while (status === 'pending_moderation') {
    await new Promise((r) => setTimeout(r, 100))
    status = (await call(`/openrtb/v2/creatives/${id}`, { key })).status
  }
  if (status !== 'approved') await call(`/admin/v1/creatives/${id}/review`, { method: 'POST', key: adminToken, body: { decision: 'approved', reason: 'benchmark' } })
  return id
}

/**
 * A partner with `screens` FEIN screens in Austin (fein-0, fein-1, ...): its key, audience batches of 100 screens
 * each that together measure every screen once (the bodies a sensor gateway sends), and each screen's embed path.
 */
export async function benchFeinFleet (call: Call, screens: number): Promise<{ partnerKey: string, bodies: string[], embeds: string[] }> {
  const partner = await call('/v1/partner/register', { method: 'POST', body: { name: 'Bench Sensors', slug: 'bench-sensors', contact_email: 'ops@sensors.example', partner_type: 'screen_operator', domain: 'benchsensors.example' } })
  const partnerKey = partner.api_key.key as string
  const ids = Array.from({ length: screens }, (_, i) => `fein-${i}`)
  const embeds: string[] = []
  for (let i = 0; i < ids.length; i += 1000) {
    const devices = ids.slice(i, i + 1000).map((id) => ({ device_id: id, name: id, display: { width: 1920, height: 1080 }, location: { lat: 30.2672, lng: -97.7431, venue_type: 'gym', city: 'Austin', state: 'TX', country: 'US' }, capabilities: { fein: true } }))
    const { results } = await call('/v1/partner/devices/batch', { method: 'POST', key: partnerKey, body: { devices } }) as { results: Array<{ embed_url: string }> }
    embeds.push(...results.map((r) => new URL(r.embed_url).pathname))
  }
  const bodies: string[] = []
  for (let i = 0; i < ids.length; i += 100) {
    const updates = ids.slice(i, i + 100).map((id, j) => ({ device_id: id, live_face_count: 3 + (j % 20), attention_score: 0.4 + (j % 5) / 10, dominant_emotion: 'happy', vas_seconds: 12, vas_plays: 1 }))
    bodies.push(JSON.stringify({ updates }))
  }
  return { partnerKey, bodies, embeds }
}
