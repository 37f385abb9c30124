import type { ExchangeBidRequest } from '../generated/types.js'
import type { CreativeRecord } from '../creatives/records.js'
import { escapeXml, vastInline } from '../player/vast.js'

/**
 * The markup (adm) of a bid to an exchange: an image tag for a banner, a VAST 4.2 InLine ad for video. Either points
 * at the moderated asset this service serves; the VAST Impression is the bid's billing notice, so a play reported by
 * a VAST player bills even when the exchange sends no burl. display is the imp's size, for an asset never measured.
 */
export function markup (creative: CreativeRecord, mtype: 1 | 2, assetUrl: string, bidId: string, impressionUrl: string, display: { width: number, height: number }): string {
  const w = creative.asset?.width
  const h = creative.asset?.height
  if (mtype === 1) return `<img src="${escapeXml(assetUrl)}"${w !== undefined ? ` width="${w}"` : ''}${h !== undefined ? ` height="${h}"` : ''} alt="${escapeXml(creative.name)}">`
  return vastInline({ adId: bidId, creative, assetUrl, impressionUrl, durationSeconds: creative.asset?.duration_seconds ?? 15, display })
}

/**
 * The size an imp shows an ad at, for markup whose asset was never measured: the video player's, else the banner's,
 * else full HD, the commonest screen (VAST requires a MediaFile size).
 */
export function displayOf (imp: ExchangeBidRequest['imp'][number]): { width: number, height: number } {
  const v = imp.video
  if (v?.w !== undefined && v.h !== undefined && v.w > 0 && v.h > 0) return { width: v.w, height: v.h }
  const b = imp.banner
  if (b?.w !== undefined && b.h !== undefined && b.w > 0 && b.h > 0) return { width: b.w, height: b.h }
  return { width: 1920, height: 1080 }
}
