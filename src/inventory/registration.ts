import { createHash, randomBytes } from 'node:crypto'
import { iso } from '../clock.js'
import { ApiError } from '../errors.js'
import type { DeviceRegisterRequest, OperatingHours, VenueType } from '../generated/types.js'
import { isCountry, isTimezone, nearestCity, stateCode, timezoneAt } from './geo.js'
import { hoursProblem } from './hours.js'
import type { PartnerRecord, ScreenRecord } from './records.js'

// A partner's device as a screen: its id, and the record its registration makes of it (what the partner sent, what
// it left out derived from its location, and what the operator or partner set since kept).

/** Default floors (USD CPM) by venue, used when a device registers without one. */
const DEFAULT_FLOOR: Record<VenueType, number> = {
  airport: 14, transit: 9, retail: 8, gym: 6.5, bar: 7, restaurant: 6, hotel_lobby: 10, office: 9,
  hospital: 5, salon: 5.5, gas_station: 4.5, laundromat: 3.5, university: 5, coworking: 8.5
}

/** Stable screen id of a partner's device: the same device always maps to the same screen. */
export function screenIdFor (partnerId: string, deviceId: string): string {
  return 'scr_' + createHash('sha256').update(`${partnerId}\u0000${deviceId}`).digest('hex').slice(0, 20)
}

/** A time zone and operating hours as a registration or the partner's settings give them: 400 when either is invalid. */
export function checkTimeAndHours (timezone: string | undefined, hours: OperatingHours | undefined): void {
  if (timezone !== undefined && !isTimezone(timezone)) throw new ApiError('invalid_parameter', `timezone ${timezone} is not an IANA time zone.`, { param: 'timezone' })
  if (hours !== undefined) {
    const problem = hoursProblem(hours)
    if (problem !== undefined) throw new ApiError('invalid_parameter', `operating_hours ${problem}.`, { param: 'operating_hours' })
  }
}

/** The screen a device's registration makes: a new one, or the existing one (`existing`) registered again. */
export function registeredScreen (id: string, partner: PartnerRecord, req: DeviceRegisterRequest, existing: ScreenRecord | undefined, now: number): ScreenRecord {
  const loc = req.location
  const place = loc.country === undefined || loc.city === undefined ? nearestCity(loc.lat, loc.lng) : undefined
  const country = (loc.country ?? place?.country)?.toUpperCase()
  if (country === undefined) throw new ApiError('invalid_parameter', 'These coordinates are not near a known city: give location.country, location.state and location.city.', { param: 'location.country' })
  if (!isCountry(country)) throw new ApiError('invalid_parameter', `location.country ${country} is not an ISO 3166-1 alpha-2 code.`, { param: 'location.country' })
  const state = loc.state !== undefined ? (stateCode(country, loc.state) ?? loc.state.toUpperCase()) : (place?.country === country ? place.state : '')
  const city = loc.city ?? (place?.country === country ? place.city : '')
  checkTimeAndHours(req.timezone, req.operating_hours)
  const stamp = iso(now)
  const location: ScreenRecord['location'] = { lat: loc.lat, lng: loc.lng, venue_type: loc.venue_type, address: loc.address ?? [city, state, country].filter(Boolean).join(', '), city, state, country }
  if (loc.venue_name !== undefined) location.venue_name = loc.venue_name
  if (loc.zip !== undefined) location.zip = loc.zip
  const display = { ...req.display, orientation: req.display.orientation ?? (req.display.height > req.display.width ? 'portrait' as const : 'landscape' as const) }
  const screen: ScreenRecord = {
    screen_id: id,
    partner_id: partner.id,
    device_id: req.device_id,
    device_type: req.device_type ?? 'other',
    name: req.name,
    display,
    location,
    capabilities: { fein: req.capabilities?.fein ?? false, video: req.capabilities?.video ?? true, audio: req.capabilities?.audio ?? false, touch: req.capabilities?.touch ?? false },
    slot_duration_seconds: req.slot_duration_seconds ?? existing?.slot_duration_seconds ?? 15,
    floor_price_cpm: req.floor_price_cpm ?? existing?.floor_price_cpm ?? DEFAULT_FLOOR[loc.venue_type],
    blocked_categories: existing?.blocked_categories ?? [],
    blocked_advertisers: existing?.blocked_advertisers ?? [],
    max_age_rating: existing?.max_age_rating ?? (loc.venue_type === 'hospital' || loc.venue_type === 'university' ? 'PG' : loc.venue_type === 'bar' ? 'R' : 'PG-13'),
    timezone: req.timezone ?? existing?.timezone ?? timezoneAt(loc.lat, loc.lng),
    auction_enabled: existing?.auction_enabled ?? true,
    source: existing?.source ?? partner.source,
    embed_token: existing?.embed_token ?? 'emb_' + randomBytes(18).toString('base64url'),
    created_at: existing?.created_at ?? stamp,
    updated_at: stamp
  }
  const imageUrl = req.image_url ?? existing?.image_url
  if (imageUrl !== undefined) screen.image_url = imageUrl
  const hours = req.operating_hours ?? existing?.operating_hours
  if (hours !== undefined) screen.operating_hours = hours
  return screen
}
