import type { CreativeRecord } from '../creatives/records.js'

/** Text or attribute content safe inside XML. */
export function escapeXml (s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;')
}

function duration (seconds: number): string {
  const s = Math.max(1, Math.round(seconds))
  return `${String(Math.floor(s / 3600)).padStart(2, '0')}:${String(Math.floor(s / 60) % 60).padStart(2, '0')}:${String(s % 60).padStart(2, '0')}.000`
}

/** Linear tracking events a VAST ad may carry, with the URL each calls. */
export type Tracking = Partial<Record<'start' | 'firstQuartile' | 'midpoint' | 'thirdQuartile' | 'complete', string>>

/** What one VAST 4.2 InLine ad says. */
export interface VastAd {
  adId: string
  creative: CreativeRecord
  assetUrl: string
  impressionUrl: string
  durationSeconds: number
  tracking?: Tracking
  errorUrl?: string
  /** The size the ad is shown at when the asset's was not measured: VAST requires MediaFile width and height. */
  display: { width: number, height: number }
}

/**
 * A VAST 4.2 document with one InLine linear ad pointing at a moderated asset this service serves, in the element
 * order of the IAB vast_4.2.xsd (test/fixtures/iab): the ad's AdSystem, Error, Impression, then AdServingId, AdTitle
 * and Creatives; in a Creative, Linear before UniversalAdId; in Linear, TrackingEvents before Duration.
 */
export function vastInline (ad: VastAd): string {
  const c = ad.creative
  const w = c.asset?.width ?? ad.display.width
  const h = c.asset?.height ?? ad.display.height
  const type = c.asset?.media_type ?? c.content_type
  const tracking = Object.entries(ad.tracking ?? {}).map(([event, url]) => `<Tracking event="${event}"><![CDATA[${url}]]></Tracking>`).join('')
  return '<?xml version="1.0" encoding="UTF-8"?>' +
    `<VAST version="4.2" xmlns="http://www.iab.com/VAST"><Ad id="${escapeXml(ad.adId)}"><InLine>` +
    '<AdSystem version="1.0">oohbid</AdSystem>' +
    (ad.errorUrl !== undefined ? `<Error><![CDATA[${ad.errorUrl}]]></Error>` : '') +
    `<Impression id="oohbid"><![CDATA[${ad.impressionUrl}]]></Impression>` +
    `<AdServingId>${escapeXml(ad.adId)}</AdServingId>` +
    `<AdTitle>${escapeXml(c.name)}</AdTitle>` +
    `<Creatives><Creative id="${escapeXml(c.creative_id)}" adId="${escapeXml(c.creative_id)}">` +
    '<Linear>' +
    (tracking !== '' ? `<TrackingEvents>${tracking}</TrackingEvents>` : '') +
    `<Duration>${duration(ad.durationSeconds)}</Duration>` +
    '<MediaFiles>' +
    `<MediaFile delivery="progressive" type="${escapeXml(type)}" width="${w}" height="${h}"><![CDATA[${ad.assetUrl}]]></MediaFile>` +
    '</MediaFiles></Linear>' +
    `<UniversalAdId idRegistry="oohbid">${escapeXml(c.creative_id)}</UniversalAdId>` +
    '</Creative></Creatives></InLine></Ad></VAST>'
}

/** A VAST 4.2 document with no ad: the standard answer when nothing plays. */
export function vastEmpty (): string {
  return '<?xml version="1.0" encoding="UTF-8"?><VAST version="4.2" xmlns="http://www.iab.com/VAST"/>'
}
