import type { CreativeAsset } from '../generated/types.js'
import { assetUrlProblem, creativeIdOfCrid, registerCreative } from '../creatives/register.js'
import { typeByExtension, typeOfExtension } from '../creatives/from-markup.js'
import type { CreativeRecord } from '../creatives/records.js'
import type { ToolCall } from './call.js'
import { knownFormat } from './catalog.js'

/** AdCP's creative status for a moderation status. */
export function adcpStatusOf (status: CreativeRecord['status']): string {
  return { approved: 'approved', rejected: 'rejected', pending_moderation: 'pending_review', needs_review: 'pending_review', awaiting_upload: 'processing' }[status] ?? 'processing'
}

/** Why moderation or a reviewer turned a creative down, as one line. */
export function rejectionOf (c: CreativeRecord): string | undefined {
  if (c.status !== 'rejected') return undefined
  const review = c.reviews?.at(-1)
  return review?.reason ?? c.failure ?? c.moderation?.reasons?.join('; ')
}

/** What syncing one creative did: the creative (when there is one), AdCP's action, and why it failed or what to know. */
export interface Upserted {
  creative?: CreativeRecord
  action: 'created' | 'unchanged' | 'failed'
  errors: string[]
  warnings: string[]
}

/**
 * Registers a buyer's creative (AdCP creative_id = our crid, so a bid with that crid finds the same creative) by
 * the URL of its primary asset, for moderation like POST /creatives in URL mode; a creative_id already registered with
 * that asset is unchanged, and one registered with another asset is refused (creatives are immutable once moderated:
 * sync a new creative_id). Call inside Store.write, and schedule moderation of what was created after it commits.
 */
export function upsertCreative (call: ToolCall, c: CreativeAsset): Upserted {
  const errors: string[] = []
  const warnings: string[] = []
  const format = typeof c.format_id === 'string' ? c.format_id : c.format_id?.id
  if (format !== undefined && !knownFormat(call, format)) errors.push(`format_id ${format} is not a format of this agent; list_creative_formats names them.`)
  const primary = c.assets.primary
  const type = primary.format !== undefined ? typeOfExtension(primary.format) : typeByExtension(primary.url)
  if (type === undefined) errors.push('The media type of assets.primary is unknown: give assets.primary.format (jpeg, png, webp, gif, mp4 or webm).')
  const problem = assetUrlProblem(primary.url, call.config.allowPrivateAssetUrls)
  if (problem !== undefined) errors.push(`assets.primary.url ${problem}.`)
  const id = creativeIdOfCrid(call.seat.seat_id, c.creative_id)
  const existing = call.store.creatives.get(id)
  if (existing !== undefined) {
    if (existing.source_url === primary.url) return { creative: existing, action: 'unchanged', errors: [], warnings }
    errors.push(`creative_id ${c.creative_id} is registered with another asset (${existing.source_url ?? 'an upload'}); a moderated creative does not change: sync the new asset under a new creative_id.`)
  }
  if (errors.length > 0) return { action: 'failed', errors, warnings }
  if (format !== undefined && primary.width !== undefined && primary.height !== undefined) {
    const size = /^dooh_(\d+)x(\d+)_/.exec(format)
    if (size !== null && (Number(size[1]) !== primary.width || Number(size[2]) !== primary.height)) warnings.push(`The asset is ${primary.width}x${primary.height} and format ${format} is ${size[1]}x${size[2]}: screens letterbox it.`)
  }
  const creative = registerCreative(call, call.seat.seat_id, { name: c.name, content_type: type!, mode: 'url', source_url: primary.url, crid: c.creative_id, ...(c.click_url !== undefined ? { click_url: c.click_url } : {}) }, call.now, id)
  return { creative, action: 'created', errors, warnings }
}
