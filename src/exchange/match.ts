import { datedStatus } from '../campaigns/lifecycle.js'
import { matchesEntry } from '../campaigns/targeting.js'
import type { ExchangeBidRequest, Targeting, VenueType } from '../generated/types.js'
import type { IndexKey, IndexTuple, ScreenRecord } from '../inventory/records.js'
import { present } from '../inventory/fein.js'
import { countryCode, stateCode, timezoneAt } from '../inventory/geo.js'
import { localTime } from '../inventory/local-time.js'
import { VENUES } from '../inventory/venues.js'
import type { CampaignRecord } from '../campaigns/records.js'
import type { CreativeRecord } from '../creatives/records.js'
import type { Store } from '../store/store.js'
import { Derived, perStore } from '../store/read-cache.js'

type Imp = ExchangeBidRequest['imp'][number]

/** Where an exchange's impression would play, as far as its bid request says. */
export interface Placement {
  /** One of our own screens, when the request names it (dooh.id, site.id or device.ifa): full targeting applies. */
  screen?: ScreenRecord
  entry?: { key: IndexKey, tuple: IndexTuple }
  country?: string
  region?: string
  city?: string
  venueTypes: VenueType[]
  timezone?: string
}

const venueByOpenOoh = new Map<string, VenueType[]>()
for (const [type, v] of Object.entries(VENUES) as Array<[VenueType, typeof VENUES[VenueType]]>) {
  for (const id of v.openooh.slice(1)) venueByOpenOoh.set(id, [...(venueByOpenOoh.get(id) ?? []), type])
}

/** Geo lookups by their inputs: an exchange sends the same few places over and over, and each lookup scans tables. */
const geoMemo = new Map<string, { country?: string, region?: string, timezone?: string }>()

function geoOf (geo: NonNullable<NonNullable<ExchangeBidRequest['device']>['geo']>): { country?: string, region?: string, timezone?: string } {
  const id = `${geo.country ?? ''}|${geo.region ?? ''}|${geo.lat ?? ''}|${geo.lon ?? ''}`
  let out = geoMemo.get(id)
  if (out === undefined) {
    out = {}
    const country = geo.country !== undefined ? countryCode(geo.country) : undefined
    if (country !== undefined) out.country = country
    if (geo.region !== undefined) out.region = (country !== undefined ? stateCode(country, geo.region) : undefined) ?? geo.region.toUpperCase()
    if (geo.lat !== undefined && geo.lon !== undefined) out.timezone = timezoneAt(geo.lat, geo.lon)
    if (geoMemo.size >= 50_000) geoMemo.clear()
    geoMemo.set(id, out)
  }
  return out
}

/** The placement a bid request describes: our screen when it names one, else its geo and OpenOOH venue fields. */
export function placementOf (req: ExchangeBidRequest, store: Store): Placement {
  for (const id of [req.dooh?.id, req.site?.id, req.device?.ifa]) {
    if (id === undefined) continue
    const screen = store.screens.get(id)
    if (screen === undefined) continue
    const key = store.adslotPos.get(id)
    const tuple = key !== undefined ? store.adslotIndex.get(key) : undefined
    const p: Placement = { screen, country: screen.location.country, region: screen.location.state, city: screen.location.city, venueTypes: [screen.location.venue_type], timezone: screen.timezone }
    if (key !== undefined && tuple !== undefined) p.entry = { key, tuple }
    return p
  }
  const geo = req.device?.geo
  const p: Placement = { venueTypes: (req.dooh?.venuetype ?? []).flatMap((id) => venueByOpenOoh.get(id) ?? []) }
  if (geo !== undefined) Object.assign(p, geoOf(geo))
  if (geo?.city !== undefined) p.city = geo.city
  return p
}

const DAYPARTS: Record<string, [number, number]> = { morning: [360, 720], afternoon: [720, 1020], evening: [1020, 1320] }

function inDaypart (part: string, minute: number): boolean {
  if (part === 'late_night') return minute >= 1320 || minute < 360
  const [from, to] = DAYPARTS[part]!
  return minute >= from && minute < to
}

/**
 * Whether a campaign's targeting holds for a placement now. On our own screens every key applies, live FEIN
 * conditions included; elsewhere the request's geo and venue fields answer the location keys, and keys a request
 * cannot answer (screen_ids, min_vas, min_attention, emotion) do not match: the campaign's conditions are never
 * assumed.
 */
export function targets (t: Targeting, p: Placement, store: Store, now: number): boolean {
  if (p.screen !== undefined && p.entry !== undefined) {
    if (!matchesEntry(t, p.entry.key, p.entry.tuple)) return false
    if (t.min_attention !== undefined || t.emotion !== undefined) {
      const fein = present(store.fein.get(p.screen.screen_id), p.screen.capabilities.fein, now)
      if (t.min_attention !== undefined && (fein.attention_score === null || fein.attention_score * 100 < t.min_attention)) return false
      if (t.emotion !== undefined && fein.dominant_emotion !== t.emotion) return false
    }
  } else {
    if ((t.screen_ids?.length ?? 0) > 0 || t.min_vas !== undefined || t.min_attention !== undefined || t.emotion !== undefined) return false
    const countries = [...(t.countries ?? []), ...(t.country !== undefined ? [t.country] : [])]
    const venues = [...(t.venue_types ?? []), ...(t.venue_type !== undefined ? [t.venue_type] : [])]
    if (countries.length > 0 && (p.country === undefined || !countries.includes(p.country))) return false
    if (venues.length > 0 && !p.venueTypes.some((v) => venues.includes(v))) return false
    if (t.state !== undefined && p.region?.toUpperCase() !== t.state.toUpperCase()) return false
    if (t.city !== undefined && (p.city === undefined || !p.city.toLowerCase().includes(t.city.toLowerCase()))) return false
  }
  if (t.dayparts !== undefined && t.dayparts.length > 0) {
    if (p.timezone === undefined) return false
    const minute = localTime(p.timezone, now).minute
    if (!t.dayparts.some((d) => inDaypart(d, minute))) return false
  }
  return true
}

/** What a creative would be served as in an imp (OpenRTB mtype 1 banner, 2 video), or undefined when it does not fit. */
export function fit (creative: CreativeRecord, imp: Imp): { mtype: 1 | 2, w?: number, h?: number } | undefined {
  const type = creative.asset?.media_type ?? creative.content_type
  const { width: w, height: h, duration_seconds: seconds } = creative.asset ?? {}
  const size = (out: { mtype: 1 | 2, w?: number, h?: number }) => {
    if (w !== undefined) out.w = w
    if (h !== undefined) out.h = h
    return out
  }
  if (type.startsWith('video/')) {
    const v = imp.video
    if (v === undefined) return undefined
    if (v.mimes !== undefined && v.mimes.length > 0 && !v.mimes.includes(type)) return undefined
    if (seconds !== undefined && ((v.maxduration !== undefined && v.maxduration > 0 && seconds > v.maxduration) || (v.minduration !== undefined && seconds < v.minduration))) return undefined
    return size({ mtype: 2 })
  }
  if (!type.startsWith('image/')) return undefined
  const b = imp.banner
  if (b === undefined) return undefined
  if (b.mimes !== undefined && b.mimes.length > 0 && !b.mimes.includes(type)) return undefined
  const sizes = [...(b.w !== undefined && b.h !== undefined ? [{ w: b.w, h: b.h }] : []), ...(b.format ?? [])].filter((f): f is { w: number, h: number } => (f.w ?? 0) > 0 && (f.h ?? 0) > 0)
  // Screens scale a creative to fit: the same aspect ratio (within 1%) is as good as the exact size.
  if (w !== undefined && h !== undefined && sizes.length > 0 && !sizes.some((s) => Math.abs(s.w / s.h - w / h) <= 0.01 * (w / h))) return undefined
  return size({ mtype: 1 })
}

/**
 * Campaigns that could bid today, derived once per change of the campaigns table and per day. A media buy's campaign
 * is left out: it delivers through its placement on the screens its package bought.
 */
const live = perStore((store: Store) => new Derived<string, CampaignRecord[]>(() => store.campaigns.version, { max: 2 }))

export function liveCampaigns (store: Store, now: number): CampaignRecord[] {
  return live(store).of(new Date(now).toISOString().slice(0, 10), () => [...store.campaigns.getRange()].map(({ value }) => value).filter((c) => c.media_buy_id === undefined && c.status !== 'paused' && c.status !== 'completed' && datedStatus(c, now) === 'active'))
}
