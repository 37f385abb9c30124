import { bookedOn } from '../../campaigns/capacity.js'
import { iso } from '../../clock.js'
import type { Deps } from '../../deps.js'
import { ApiError } from '../../errors.js'
import type { AvailabilityRequest, ScreenAudienceRequest, ScreenProfile } from '../../generated/types.js'
import { ok, route, type RouteDef } from '../../http/route.js'
import { present, vas7d } from '../fein.js'
import { datesBetween, openHoursPerWeek, openMinutesOn } from '../hours.js'
import type { Inventory } from '../inventory.js'
import { openrtbDeviceType, VENUES } from '../venues.js'
import type { FeinState, ScreenRecord } from '../records.js'

const HOUR = 3_600_000
const DAY = 24 * HOUR
const MAX_DAYS = 366

function gcd (a: number, b: number): number {
  return b === 0 ? a : gcd(b, a % b)
}

/** Hour-of-day averages over the stored week. */
function hourlyProfile (state: FeinState | undefined): Array<{ hour: number, avg_face_count: number | null, avg_attention: number | null, samples: number }> {
  const acc = Array.from({ length: 24 }, () => ({ faces: 0, attention: 0, samples: 0 }))
  for (const [start, faces, attention, samples] of state?.hours ?? []) {
    const a = acc[new Date(start).getUTCHours()]!
    a.faces += faces
    a.attention += attention
    a.samples += samples
  }
  return acc.map((a, hour) => ({ hour, avg_face_count: a.samples ? Math.round((a.faces / a.samples) * 100) / 100 : null, avg_attention: a.samples ? Math.round((a.attention / a.samples) * 1000) / 1000 : null, samples: a.samples }))
}

/** The profile groups of the spec: physical size, spots, venue, attention, performance, reliability, device, brand safety. */
function profile (inventory: Inventory, s: ScreenRecord, now: number): ScreenProfile {
  const state = s.capabilities.fein ? inventory.store.fein.get(s.screen_id) : undefined
  const fein = present(state, s.capabilities.fein, now)
  const status = inventory.statusOf(s.screen_id)
  const recent = (state?.hours ?? []).filter(([start]) => start > now - DAY)
  const samples = recent.reduce((n, h) => n + h[3], 0)
  const peak = recent.reduce<[number, number] | undefined>((best, h) => (h[3] > 0 && (best === undefined || h[1] / h[3] > best[1]) ? [new Date(h[0]).getUTCHours(), h[1] / h[3]] : best), undefined)
  const beats = status.hours.filter(([h]) => h > now - DAY)
  const hoursKnown = Math.min(24, Math.ceil((now - Date.parse(s.created_at)) / HOUR))
  const { width, height } = s.display
  const d = gcd(width, height)
  return {
    screen_id: s.screen_id,
    name: s.name,
    source: s.source,
    updated_at: s.updated_at,
    physical: { width_px: width, height_px: height, orientation: s.display.orientation, aspect_ratio: `${width / d}:${height / d}`, ...(s.display.diagonal_inches !== undefined ? { diagonal_inches: s.display.diagonal_inches } : {}) },
    spot: {
      slot_duration_seconds: s.slot_duration_seconds,
      spots_per_hour: Math.floor(3600 / s.slot_duration_seconds),
      floor_price_cpm: s.floor_price_cpm,
      currency: 'USD',
      ad_formats: s.capabilities.video ? ['image', 'video'] : ['image'],
      operating_hours: s.operating_hours ?? null,
      open_hours_per_week: openHoursPerWeek(s.operating_hours),
      timezone: s.timezone
    },
    venue: {
      venue_type: s.location.venue_type,
      ...(s.location.venue_name !== undefined ? { venue_name: s.location.venue_name } : {}),
      openooh_venue_type: VENUES[s.location.venue_type].openooh,
      address: s.location.address,
      city: s.location.city,
      state: s.location.state,
      country: s.location.country,
      ...(s.location.zip !== undefined ? { zip: s.location.zip } : {}),
      lat: s.location.lat,
      lng: s.location.lng,
      crowd_density: fein.crowd_density,
      dwell_time_ms: fein.dwell_time_ms,
      income_level: fein.income_level
    },
    attention: {
      data_quality: fein.data_quality,
      vas_7d: fein.vas_7d,
      fein,
      vas_by_day: Array.from({ length: 7 }, (_, i) => {
        const dayStart = Math.floor(now / DAY) * DAY - i * DAY
        const hours = (state?.hours ?? []).filter(([h]) => h >= dayStart && h < dayStart + DAY)
        const plays = hours.reduce((n, h) => n + h[5], 0)
        return { date: iso(dayStart).slice(0, 10), vas: plays ? Math.round((hours.reduce((n, h) => n + h[4], 0) / plays) * 100) / 100 : null, plays }
      })
    },
    performance: {
      audience_samples_24h: samples,
      avg_face_count_24h: samples ? Math.round((recent.reduce((n, h) => n + h[1], 0) / samples) * 100) / 100 : null,
      avg_attention_24h: samples ? Math.round((recent.reduce((n, h) => n + h[2], 0) / samples) * 1000) / 1000 : null,
      peak_hour_utc: peak?.[0] ?? null,
      measured_plays_7d: (state?.hours ?? []).reduce((n, h) => n + h[5], 0)
    },
    reliability: {
      status: inventory.statusName(status),
      last_heartbeat_at: status.last_heartbeat !== null ? iso(status.last_heartbeat) : null,
      uptime_24h_pct: status.last_heartbeat === null ? null : Math.round((beats.length / Math.max(1, hoursKnown)) * 1000) / 10,
      heartbeats_24h: beats.reduce((n, [, c]) => n + c, 0)
    },
    device: { device_type: s.device_type, capabilities: s.capabilities, openrtb_devicetype: openrtbDeviceType(s.device_type) },
    brand_safety: { blocked_categories: s.blocked_categories, blocked_advertisers: s.blocked_advertisers, max_age_rating: s.max_age_rating }
  }
}

/** Buyer screen routes: profile, availability and bulk audience (spec, screens endpoints). */
export function screenRoutes ({ inventory, store }: Deps): RouteDef[] {
  const common = { tag: 'Inventory', envelope: 'flat', auth: 'seat', scope: 'inventory:read', rateGroup: 'inventory' } as const
  /** A screen buyers may see: auction enabled and from an enabled source. */
  const visible = (id: string): ScreenRecord | undefined => {
    const s = inventory.store.screens.get(id)
    return s !== undefined && s.auction_enabled && inventory.sourcesEnabled().includes(s.source) ? s : undefined
  }
  const listed = (ids: string[]): ScreenRecord[] => ids.map((id, i) => {
    const s = visible(id)
    if (s === undefined) throw new ApiError('invalid_screen', `screen_id ${id} is unknown.`, { param: `screen_ids.${i}` })
    return s
  })
  return [
    route({
      ...common,
      method: 'get',
      path: '/openrtb/v2/screens/:id',
      summary: 'Full screen profile',
      data: 'ScreenProfile',
      errors: ['screen_not_found'],
      handler: (ctx) => {
        const s = visible(ctx.params.id!)
        if (s === undefined) throw new ApiError('screen_not_found', `No screen ${ctx.params.id}.`, { param: 'id' })
        return ok(profile(inventory, s, ctx.now))
      }
    }),
    route<AvailabilityRequest>({
      ...common,
      method: 'post',
      path: '/openrtb/v2/screens/availability',
      summary: 'Deliverable capacity, booked and remaining spots per screen and day',
      description: 'At most 50 screens and 366 days. Capacity per day is the open time in the screen\'s local operating hours divided by its slot duration; booked counts what placements, reservations and guaranteed deals have taken. Days past in every time zone (two days before today in UTC, and earlier) report nothing booked: the ledger keeps only the days that can still be played. granularity=total sums the range into one period.',
      body: 'AvailabilityRequest',
      data: 'Availability',
      errors: ['invalid_screen', 'invalid_date'],
      handler: (ctx) => {
        const { start_date: start, end_date: end } = ctx.body
        if (start > end) throw new ApiError('invalid_date', 'start_date must not be after end_date.', { param: 'end_date' })
        const days = datesBetween(start, end)
        if (days.length > MAX_DAYS) throw new ApiError('invalid_date', `At most ${MAX_DAYS} days at a time.`, { param: 'end_date' })
        const granularity = ctx.body.granularity ?? 'daily'
        const screens = listed(ctx.body.screen_ids).map((s) => {
          const periods = days.map((date) => {
            const minutes = openMinutesOn(s.operating_hours, date)
            const capacity = Math.floor((minutes * 60) / s.slot_duration_seconds)
            const booked = Math.min(capacity, bookedOn(store, s.screen_id, date))
            return { date, open_hours: minutes / 60, capacity, booked, remaining: capacity - booked }
          })
          const sum = (k: 'capacity' | 'booked' | 'remaining') => periods.reduce((n, p) => n + p[k], 0)
          return {
            screen_id: s.screen_id,
            slot_duration_seconds: s.slot_duration_seconds,
            capacity: sum('capacity'),
            booked: sum('booked'),
            remaining: sum('remaining'),
            periods: granularity === 'daily' ? periods : [{ date: `${start}/${end}`, open_hours: periods.reduce((n, p) => n + p.open_hours, 0), capacity: sum('capacity'), booked: sum('booked'), remaining: sum('remaining') }]
          }
        })
        return ok({ start_date: start, end_date: end, granularity, screens })
      }
    }),
    route<ScreenAudienceRequest>({
      ...common,
      method: 'post',
      path: '/openrtb/v2/screens/audience',
      summary: 'Bulk audience profiles for up to 50 screens: live signals and VAS history',
      body: 'ScreenAudienceRequest',
      data: 'ScreenAudience',
      errors: ['invalid_screen'],
      handler: (ctx) => ok({
        screens: listed(ctx.body.screen_ids).map((s) => {
          const state = s.capabilities.fein ? inventory.store.fein.get(s.screen_id) : undefined
          const fein = present(state, s.capabilities.fein, ctx.now)
          const vas = state !== undefined ? vas7d(state, ctx.now) : null
          return {
            screen_id: s.screen_id,
            data_quality: fein.data_quality,
            live: fein.data_quality === 'live' ? fein : null,
            historical: state !== undefined && state.hours.length > 0 ? { vas_7d: vas, hourly_profile: hourlyProfile(state) } : null
          }
        })
      })
    })
  ]
}
