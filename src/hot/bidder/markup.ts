import type { CreativeRecord } from '../../store/records.js'

function escapeXml (s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;')
}

function duration (seconds: number): string {
  const s = Math.max(1, Math.round(seconds))
  return `${String(Math.floor(s / 3600)).padStart(2, '0')}:${String(Math.floor(s / 60) % 60).padStart(2, '0')}:${String(s % 60).padStart(2, '0')}.000`
}

/**
 * The markup (adm) of a bid to an exchange: an image tag for a banner, a VAST 4.2 InLine ad for video. Either points
 * at the moderated asset this service serves; the VAST Impression is the bid's billing notice, so a play reported by
 * a VAST player bills even when the exchange sends no burl.
 */
export function markup (creative: CreativeRecord, mtype: 1 | 2, assetUrl: string, bidId: string, impressionUrl: string): string {
  const w = creative.asset?.width
  const h = creative.asset?.height
  if (mtype === 1) return `<img src="${escapeXml(assetUrl)}"${w !== undefined ? ` width="${w}"` : ''}${h !== undefined ? ` height="${h}"` : ''} alt="${escapeXml(creative.name)}">`
  const type = creative.asset?.media_type ?? creative.content_type
  return '<?xml version="1.0" encoding="UTF-8"?>' +
    `<VAST version="4.2" xmlns="http://www.iab.com/VAST"><Ad id="${escapeXml(bidId)}"><InLine>` +
    '<AdSystem version="1.0">oohbid</AdSystem>' +
    `<AdServingId>${escapeXml(bidId)}</AdServingId>` +
    `<AdTitle>${escapeXml(creative.name)}</AdTitle>` +
    `<Impression id="oohbid"><![CDATA[${impressionUrl}]]></Impression>` +
    `<Creatives><Creative id="${escapeXml(creative.creative_id)}" adId="${escapeXml(creative.creative_id)}">` +
    `<UniversalAdId idRegistry="oohbid">${escapeXml(creative.creative_id)}</UniversalAdId>` +
    `<Linear><Duration>${duration(creative.asset?.duration_seconds ?? 15)}</Duration><MediaFiles>` +
    `<MediaFile delivery="progressive" type="${escapeXml(type)}"${w !== undefined ? ` width="${w}"` : ''}${h !== undefined ? ` height="${h}"` : ''}><![CDATA[${assetUrl}]]></MediaFile>` +
    '</MediaFiles></Linear></Creative></Creatives></InLine></Ad></VAST>'
}
