import type { CreativeRecord } from '../../store/records.js'
import { escapeXml, vastInline } from '../vast.js'

/**
 * The markup (adm) of a bid to an exchange: an image tag for a banner, a VAST 4.2 InLine ad for video. Either points
 * at the moderated asset this service serves; the VAST Impression is the bid's billing notice, so a play reported by
 * a VAST player bills even when the exchange sends no burl.
 */
export function markup (creative: CreativeRecord, mtype: 1 | 2, assetUrl: string, bidId: string, impressionUrl: string): string {
  const w = creative.asset?.width
  const h = creative.asset?.height
  if (mtype === 1) return `<img src="${escapeXml(assetUrl)}"${w !== undefined ? ` width="${w}"` : ''}${h !== undefined ? ` height="${h}"` : ''} alt="${escapeXml(creative.name)}">`
  return vastInline({ adId: bidId, creative, assetUrl, impressionUrl, durationSeconds: creative.asset?.duration_seconds ?? 15 })
}
