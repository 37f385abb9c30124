#!/usr/bin/env node
// The fleet simulator: registers partners and their screens through the public partner API, then streams heartbeats
// and FEIN audience updates at device rates and runs headless players (the spots their embed_url decides, played for
// their slot with render_started and play_completed; now and then a screen drops offline and comes back) until
// stopped. `npm start` runs it with DEMO_FLEET screens; benchmarks and load tests run it alone.
import { setMaxListeners } from 'node:events'
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { setTimeout as wait } from 'node:timers/promises'
import { parseArgs } from 'node:util'
import { apiClient } from './lib/api-client.js'
import { stdoutLines } from './lib/output.js'

const { values: args } = parseArgs({
  options: {
    screens: { type: 'string', default: '200' },
    'base-url': { type: 'string', default: process.env.BASE_URL ?? `http://127.0.0.1:${process.env.PORT ?? 8080}` },
    live: { type: 'string', description: 'screens that stream heartbeats and audience data' },
    players: { type: 'string', description: 'live screens that also run a headless player (default: all live ones, at most 1000)' },
    duration: { type: 'string', description: 'seconds to stream; 0 registers and exits' },
    state: { type: 'string', description: 'file keeping the partner keys between runs' },
    seed: { type: 'string', default: '42' },
    names: { type: 'string', default: '', description: 'a prefix for its partners\' names, slugs and domains: a second fleet on the same service (a benchmark\'s beside the demo market) then takes none of the first one\'s, each of which would cost a partner registration of the ten an hour an address has' },
    'forwarded-for': { type: 'string', description: 'an address every call says it is forwarded for (X-Forwarded-For), for a service that trusts this host as its proxy: partner registration is limited per address' },
    quiet: { type: 'boolean', default: false }
  }
})

const total = Number(args.screens)
const base = args['base-url']!.replace(/\/+$/, '')
const liveCount = Math.min(total, Number(args.live ?? Math.min(total, 5000)))
const playerCount = Math.min(liveCount, Number(args.players ?? Math.min(liveCount, 1000)))
const duration = args.duration === undefined ? Infinity : Number(args.duration)
if (!Number.isInteger(total) || total < 0 || total > 1_000_000) throw new Error('--screens must be 0..1000000')

/** Deterministic randomness, so that the same seed builds the same fleet. */
let seed = Number(args.seed) >>> 0
function random (): number {
  seed = (seed + 0x6d2b79f5) >>> 0
  let t = seed
  t = Math.imul(t ^ (t >>> 15), t | 1)
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296
}
const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!
function weighted<T> (items: ReadonlyArray<readonly [T, number]>): T {
  const sum = items.reduce((n, [, w]) => n + w, 0)
  let r = random() * sum
  for (const [item, w] of items) if ((r -= w) <= 0) return item
  return items[items.length - 1]![0]
}

// Real cities with their weight in the fleet: [name, state, country, lat, lng, weight].
const CITIES = [
  ['New York City', 'NY', 'US', 40.7128, -74.006, 10], ['Los Angeles', 'CA', 'US', 34.0522, -118.2437, 8], ['Chicago', 'IL', 'US', 41.8781, -87.6298, 6],
  ['Houston', 'TX', 'US', 29.7604, -95.3698, 5], ['Austin', 'TX', 'US', 30.2672, -97.7431, 4], ['Dallas', 'TX', 'US', 32.7767, -96.797, 4],
  ['Miami', 'FL', 'US', 25.7617, -80.1918, 4], ['Atlanta', 'GA', 'US', 33.749, -84.388, 4], ['Seattle', 'WA', 'US', 47.6062, -122.3321, 3],
  ['San Francisco', 'CA', 'US', 37.7749, -122.4194, 4], ['Denver', 'CO', 'US', 39.7392, -104.9903, 3], ['Boston', 'MA', 'US', 42.3601, -71.0589, 3],
  ['Phoenix', 'AZ', 'US', 33.4484, -112.074, 3], ['Las Vegas', 'NV', 'US', 36.1699, -115.1398, 3], ['Nashville', 'TN', 'US', 36.1627, -86.7816, 2],
  ['Toronto', 'ON', 'CA', 43.6532, -79.3832, 3], ['Vancouver', 'BC', 'CA', 49.2827, -123.1207, 2], ['Montreal', 'QC', 'CA', 45.5017, -73.5673, 2],
  ['London', 'ENG', 'GB', 51.5074, -0.1278, 5], ['Manchester', 'ENG', 'GB', 53.4808, -2.2426, 2], ['Berlin', 'BE', 'DE', 52.52, 13.405, 3],
  ['Munich', 'BY', 'DE', 48.1351, 11.582, 2], ['Paris', 'IDF', 'FR', 48.8566, 2.3522, 3], ['Madrid', 'MD', 'ES', 40.4168, -3.7038, 2],
  ['Amsterdam', 'NH', 'NL', 52.3676, 4.9041, 2], ['Sydney', 'NSW', 'AU', -33.8688, 151.2093, 3], ['Melbourne', 'VIC', 'AU', -37.8136, 144.9631, 2],
  ['Mexico City', 'CMX', 'MX', 19.4326, -99.1332, 2], ['São Paulo', 'SP', 'BR', -23.5505, -46.6333, 2], ['Tokyo', '13', 'JP', 35.6762, 139.6503, 2],
  ['Singapore', '01', 'SG', 1.3521, 103.8198, 1], ['Dubai', 'DU', 'AE', 25.2048, 55.2708, 1]
] as const

// Venue mix: [type, weight, typical opening hours, people in the venue at peak].
const VENUES = [
  ['retail', 18, [['08:00', '22:00']], 120], ['restaurant', 14, [['11:00', '23:00']], 60], ['bar', 10, [['16:00', '24:00']], 80],
  ['gym', 10, [['05:00', '23:00']], 50], ['hotel_lobby', 6, undefined, 40], ['transit', 8, [['05:00', '24:00']], 300],
  ['office', 8, [['07:00', '20:00']], 150], ['hospital', 4, undefined, 90], ['salon', 5, [['09:00', '19:00']], 15],
  ['gas_station', 6, undefined, 20], ['laundromat', 3, [['07:00', '22:00']], 12], ['airport', 3, undefined, 800],
  ['university', 3, [['07:00', '23:00']], 400], ['coworking', 2, [['07:00', '21:00']], 60]
] as const

const EMOTIONS = [['happy', 30], ['neutral', 45], ['surprised', 8], ['sad', 8], ['angry', 4], ['fear', 3], ['disgust', 2]] as const
const DEVICE_TYPES = ['android_tv', 'fire_tv', 'tizen', 'webos', 'brightsign', 'chromeos', 'raspberry_pi', 'linux'] as const
const DISPLAYS = [[1920, 1080, 55], [3840, 2160, 65], [1080, 1920, 43], [1280, 720, 32], [2160, 3840, 75]] as const

interface Partner { slug: string, key: string, kind: string }
interface Screen {
  partner: number
  device_id: string
  venue: string
  peak: number
  sensors: boolean
  hours?: readonly (readonly string[])[]
  /** The player page's address, from registration. */
  embed?: string
  /** While set and in the future, the screen is off: no heartbeats, audience or spots. */
  offlineUntil?: number
}

const out = stdoutLines()
function log (line: string): void {
  if (!args.quiet) out(line)
}

function progress (label: string, done: number, all: number, started: number): void {
  if (args.quiet || !process.stdout.isTTY) return
  const width = 30
  const filled = Math.round((done / Math.max(1, all)) * width)
  const rate = done / Math.max(0.001, (Date.now() - started) / 1000)
  process.stdout.write(`\r${label} [${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${done}/${all} ${Math.round(rate)}/s `)
  if (done === all) process.stdout.write('\n')
}

const call = apiClient(base, args['forwarded-for'] !== undefined ? { 'x-forwarded-for': args['forwarded-for'] } : {})

async function partners (): Promise<Partner[]> {
  const file = args.state
  const prefix = args.names!
  const wanted = [
    { name: 'Metro Screens', slug: 'metro-screens', partner_type: 'screen_operator', domain: 'metroscreens.example' },
    { name: 'Urban Displays', slug: 'urban-displays', partner_type: 'network', domain: 'urbandisplays.example' },
    { name: 'Curated Resale Co', slug: 'curated-resale', partner_type: 'reseller', domain: 'curatedresale.example' },
    ...Array.from({ length: Math.max(0, Math.ceil(total / 100_000) - 3) }, (_, i) => ({ name: `Regional Network ${i + 1}`, slug: `regional-${i + 1}`, partner_type: 'network', domain: `regional${i + 1}.example` }))
  ].map((w) => prefix === '' ? w : { ...w, name: `${prefix} ${w.name}`, slug: `${prefix}-${w.slug}`, domain: `${prefix}-${w.domain}` })
  const known: Partner[] = file !== undefined && existsSync(file) ? JSON.parse(readFileSync(file, 'utf8')).partners : []
  for (const w of wanted.slice(known.length)) {
    let slug = w.slug
    for (let n = 2; ; n++) {
      const r = await call('POST', '/v1/partner/register', { ...w, slug, contact_email: `ops@${w.domain}` })
      if (r.status === 201) { known.push({ slug, key: r.body.data.api_key.key, kind: w.partner_type }); break }
      if (r.status === 409) { slug = `${w.slug}-${n}`; continue }
      throw new Error(`partner registration failed: ${r.status} ${JSON.stringify(r.body)}`)
    }
    if (file !== undefined) writeFileSync(file, JSON.stringify({ partners: known }, null, 2), { mode: 0o600 })
  }
  return known
}

function device (i: number, partnerCount: number): { screen: Screen, body: Record<string, unknown> } {
  const [city, state, country, lat, lng] = weighted(CITIES.map((c) => [c, c[5]] as const))
  const [venue, , hours, peak] = weighted(VENUES.map((v) => [v, v[1]] as const))
  const [w, h, inches] = pick(DISPLAYS)
  const sensors = random() < 0.7
  const partner = i % 10 === 9 ? 2 : i % Math.max(1, partnerCount) === 2 ? 0 : i % Math.max(1, partnerCount)
  const device_id = `sim-${String(i).padStart(7, '0')}`
  const jitter = () => (random() - 0.5) * 0.08
  const location: Record<string, unknown> = { lat: Math.round((lat + jitter()) * 1e5) / 1e5, lng: Math.round((lng + jitter()) * 1e5) / 1e5, venue_type: venue, venue_name: `${city} ${venue.replace('_', ' ')} #${i}` }
  if (random() < 0.8) Object.assign(location, { city, state, country })
  const body: Record<string, unknown> = {
    device_id,
    device_type: pick(DEVICE_TYPES),
    name: `${city} ${venue.replace('_', ' ')} screen ${i}`,
    display: { width: w, height: h, diagonal_inches: inches },
    location,
    capabilities: { fein: sensors, video: random() < 0.85 },
    slot_duration_seconds: pick([10, 15, 15, 15, 30]),
    floor_price_cpm: Math.round((3 + random() * 12) * 100) / 100
  }
  if (hours !== undefined) body.operating_hours = Object.fromEntries(['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'].map((d) => [d, hours]))
  return { screen: { partner, device_id, venue, peak, sensors, ...(hours !== undefined ? { hours } : {}) }, body }
}

async function register (ps: Partner[]): Promise<Screen[]> {
  const screens: Screen[] = []
  const started = Date.now()
  const batches = new Map<number, Array<Record<string, unknown>>>()
  const embeds = new Map<string, string>()
  let done = 0
  const flush = async (p: number) => {
    const batch = batches.get(p) ?? []
    if (batch.length === 0) return
    batches.set(p, [])
    const r = await call('POST', '/v1/partner/devices/batch', { devices: batch }, ps[p]!.key)
    if (r.status !== 200) throw new Error(`batch registration failed: ${r.status} ${JSON.stringify(r.body).slice(0, 300)}`)
    for (const item of r.body.data.results) {
      if (item.status === 'rejected') log(`\nrejected ${item.device_id}: ${item.error.code} ${item.error.message}`)
      else embeds.set(item.device_id, item.embed_url)
    }
    done += batch.length
    progress('registering screens', done, total, started)
  }
  for (let i = 0; i < total; i++) {
    const { screen, body } = device(i, ps.length)
    screens.push(screen)
    const list = batches.get(screen.partner) ?? []
    list.push(body)
    batches.set(screen.partner, list)
    if (list.length === 1000) await flush(screen.partner)
  }
  for (const p of batches.keys()) await flush(p)
  for (const s of screens) {
    const embed = embeds.get(s.device_id)
    if (embed !== undefined) s.embed = new URL(embed).pathname
  }
  log(`registered ${total} screens for ${ps.length} partners in ${((Date.now() - started) / 1000).toFixed(1)} s`)
  return screens
}

/** People near a screen at this hour: a daypart curve around the venue's peak. */
function audience (s: Screen, now: Date): Record<string, unknown> {
  const hour = now.getUTCHours() + now.getUTCMinutes() / 60
  const curve = 0.25 + 0.75 * Math.max(0, Math.sin(((hour - 6) / 16) * Math.PI))
  const crowd = Math.round(s.peak * curve * (0.7 + random() * 0.6))
  const faces = Math.max(0, Math.round(crowd * (0.05 + random() * 0.15)))
  const attention = Math.round(Math.min(1, 0.2 + random() * 0.6 + (s.venue === 'gym' || s.venue === 'laundromat' ? 0.15 : 0)) * 1000) / 1000
  const plays = 1 + Math.floor(random() * 3)
  return {
    device_id: s.device_id,
    live_face_count: faces,
    attention_score: attention,
    dominant_emotion: faces > 0 ? weighted(EMOTIONS) : null,
    crowd_density: crowd,
    purchase_intent: random() < 0.3 ? pick(['low', 'medium', 'high']) : null,
    ad_receptivity: Math.round(random() * 1000) / 1000,
    income_level: weighted([['low', 2], ['medium', 5], ['high', 2], ['premium', 1]] as const),
    dwell_time_ms: Math.round((5 + random() * 40) * 1000),
    vas_seconds: Math.round(plays * attention * (3 + random() * 6) * 10) / 10,
    vas_plays: plays
  }
}

/** Stops streaming and every player at once: SIGINT, SIGTERM, or the end of --duration (counted from streaming's start). */
const stopping = new AbortController()
// Every player sleeps on it at once.
setMaxListeners(Infinity, stopping.signal)
process.once('SIGINT', () => stopping.abort())
process.once('SIGTERM', () => stopping.abort())
/** Waits ms, or less when stopping. */
const sleep = (ms: number) => wait(Math.max(0, ms), undefined, { signal: stopping.signal }).catch(() => {})
/** Spots the players were given and played to the end, for the progress line. */
const played = { spots: 0, plays: 0 }

async function stream (ps: Partner[], screens: Screen[]): Promise<void> {
  const live = screens.slice(0, liveCount)
  if (live.length === 0 || duration === 0) return
  log(`streaming heartbeats (every 30 s) and FEIN updates (every 10 s) for ${live.length} screens${duration === Infinity ? '' : ` for ${duration} s`}`)
  const started = Date.now()
  let tick = 0
  let sent = { heartbeats: 0, audience: 0 }
  while (!stopping.signal.aborted) {
    const now = new Date()
    const byPartner = new Map<number, { heartbeats: unknown[], updates: unknown[] }>()
    live.forEach((s, i) => {
      if ((s.offlineUntil ?? 0) > now.getTime()) return
      const slot = byPartner.get(s.partner) ?? { heartbeats: [], updates: [] }
      byPartner.set(s.partner, slot)
      if (i % 30 === tick % 30) slot.heartbeats.push({ device_id: s.device_id, app_version: 'sim-1.0', playing: true })
      if (s.sensors && i % 10 === tick % 10) slot.updates.push(audience(s, now))
    })
    await Promise.all([...byPartner].flatMap(([p, { heartbeats, updates }]) => {
      const calls: Array<Promise<unknown>> = []
      for (let i = 0; i < heartbeats.length; i += 1000) calls.push(call('POST', '/v1/partner/heartbeats', { heartbeats: heartbeats.slice(i, i + 1000) }, ps[p]!.key))
      for (let i = 0; i < updates.length; i += 1000) calls.push(call('POST', '/v1/partner/audience', { updates: updates.slice(i, i + 1000) }, ps[p]!.key))
      sent = { heartbeats: sent.heartbeats + heartbeats.length, audience: sent.audience + updates.length }
      return calls
    }))
    if (tick % 30 === 0) log(`${new Date().toISOString()} sent ${sent.heartbeats} heartbeats and ${sent.audience} audience updates; players were given ${played.spots} spots and played ${played.plays}`)
    tick++
    await sleep(started + tick * 1000 - Date.now())
  }
}


/**
 * A headless player on one screen, as the player page behaves: ask for the next spot, report render_started, play it
 * for its duration, report play_completed, ask again when the spot says (next_request_at); a closed screen waits as
 * long as the answer says. About once an hour a screen drops offline for a minute or three (it leaves, as a closing
 * page does, and sends nothing meanwhile), then comes back.
 */
async function player (s: Screen): Promise<void> {
  const body = { fp: s.device_id }
  // Players start spread over a few seconds, not all at once.
  await sleep(random() * 5000)
  while (!stopping.signal.aborted) {
    if (random() < 0.004) {
      s.offlineUntil = Date.now() + (60 + random() * 120) * 1000
      await call('POST', `${s.embed}/leave`, body)
      await sleep(s.offlineUntil - Date.now())
      continue
    }
    const r = await call('POST', `${s.embed}/spots`, body).catch(() => undefined)
    const spot = r?.body?.data
    if (spot === undefined || spot.spot_id === null) {
      await sleep(Math.min(60_000, Math.max(1000, Date.parse(spot?.next_request_at ?? '') - Date.now() || 15_000)))
      continue
    }
    played.spots++
    const started = Date.now()
    await call('POST', `${s.embed}/spots/${spot.spot_id}/events`, { event: 'render_started' })
    await sleep(spot.duration_seconds * 1000)
    await call('POST', `${s.embed}/spots/${spot.spot_id}/events`, { event: 'play_completed', duration_ms: Date.now() - started })
    played.plays++
    await sleep(Math.max(0, Date.parse(spot.next_request_at) - Date.now()))
  }
}

/** Runs the players of the first `playerCount` live screens until stopped. */
async function play (screens: Screen[]): Promise<void> {
  const playing = screens.slice(0, playerCount).filter((s) => s.embed !== undefined)
  if (playing.length === 0 || duration === 0) return
  log(`${playing.length} screens run a headless player`)
  await Promise.all(playing.map((s) => player(s)))
}

// Forked as the demo fleet of `npm start`: it goes when the service that started it goes, kill -9 included.
process.once('disconnect', () => process.exit(0))
const ps = await partners()
const screens = await register(ps)
if (Number.isFinite(duration)) setTimeout(() => stopping.abort(), duration * 1000).unref()
await Promise.all([stream(ps, screens), play(screens)])
