import type { ScreenRecord } from './records.js'
import { alpha3 } from './geo.js'
import { openrtbDeviceType, VENUES } from './venues.js'

/**
 * Pre-encoded JSON for the parts of an adslots row that change only when the screen does. They are written with the
 * screen and read back as strings, so a page costs string reads and joins instead of decoding records and running
 * JSON.stringify per row (bench/adslots compares the two).
 *
 * rows[0]: the screen summary without its closing brace (data_quality and vas_7d are appended per page)
 * rows[1]: the fixed members of the OpenRTB imp object
 * rows[2]: the fixed members of the bid request (dooh, device, and bcat/badv from the screen's content rules)
 * rows[3]: the fixed members of ext.trb
 */
export type Rows = [string, string, string, string]

const VIDEO_PROTOCOLS = [2, 3, 5, 6, 7, 8]

function members (o: Record<string, unknown>): string {
  return JSON.stringify(o).slice(1, -1)
}

/** The summary fields of the spec's Screen summary plus location and display. */
export function summaryOf (s: ScreenRecord): Record<string, unknown> {
  const out: Record<string, unknown> = {
    screen_id: s.screen_id,
    name: s.name,
    address: s.location.address,
    venue_type: s.location.venue_type
  }
  if (s.location.venue_name !== undefined) out.venue_name = s.location.venue_name
  out.slot_duration_seconds = s.slot_duration_seconds
  out.floor_price_cpm = s.floor_price_cpm
  if (s.image_url !== undefined) out.image_url = s.image_url
  if (s.operating_hours !== undefined) out.operating_hours = s.operating_hours
  out.updated_at = s.updated_at
  out.source = s.source
  out.city = s.location.city
  out.state = s.location.state
  out.country = s.location.country
  out.lat = s.location.lat
  out.lng = s.location.lng
  out.display = s.display
  return out
}

export function encodeRows (s: ScreenRecord, publisher: { id: string, name: string, domain: string }): Rows {
  const { width: w, height: h } = s.display
  const imp: Record<string, unknown> = { banner: { w, h } }
  if (s.capabilities.video) {
    imp.video = { mimes: ['video/mp4', 'video/webm'], minduration: 1, maxduration: s.slot_duration_seconds, w, h, protocols: VIDEO_PROTOCOLS }
  }
  imp.bidfloor = s.floor_price_cpm
  imp.bidfloorcur = 'USD'
  const venue = VENUES[s.location.venue_type]
  const geo: Record<string, unknown> = { lat: s.location.lat, lon: s.location.lng, country: alpha3(s.location.country) ?? s.location.country, region: s.location.state, city: s.location.city }
  if (s.location.zip !== undefined) geo.zip = s.location.zip
  geo.type = 1
  // OpenRTB 2.6: a request carries exactly one of site, app and dooh (Prebid Server refuses more), so the screen is dooh.
  const body: Record<string, unknown> = {
    dooh: { id: s.screen_id, name: s.name, venuetype: venue.openooh, venuetypetax: 5, publisher: { id: s.partner_id, name: publisher.name, domain: publisher.domain }, domain: publisher.domain },
    device: { ua: `oohbid-player/1.0 (${s.device_type})`, geo, devicetype: openrtbDeviceType(s.device_type), ifa: s.screen_id }
  }
  // The screen's content rules, so a DSP filters before bidding instead of learning them from a rejection.
  if (s.blocked_categories.length > 0) {
    body.bcat = s.blocked_categories
    body.cattax = 1
  }
  if (s.blocked_advertisers.length > 0) body.badv = s.blocked_advertisers
  const trb = { screen_id: s.screen_id, screen_name: s.name, venue_type: s.location.venue_type }
  return [JSON.stringify(summaryOf(s)).slice(0, -1), members(imp), members(body), members(trb)]
}
