import { createHash } from 'node:crypto'
import type { CreativeAsset } from '../generated/types.js'
import { assetUrlProblem, creativeIdOfCrid, registerCreative, registerNextVersion } from '../creatives/register.js'
import { typeByExtension, typeOfExtension } from '../creatives/from-markup.js'
import type { CreativeRecord } from '../creatives/records.js'
import { newestVersion, playingVersion } from '../creatives/versions.js'
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
  action: 'created' | 'updated' | 'unchanged' | 'failed'
  errors: string[]
  warnings: string[]
}

/**
 * The creative_id an inline creative that names none is registered by: derived from what it shows, so that a retried
 * create_media_buy registers it once.
 */
export function inlineCreativeId (c: Pick<CreativeAsset, 'name' | 'assets'>): string {
  return `inline_${createHash('sha256').update(`${c.name}\u0000${c.assets.primary.url}`).digest('hex').slice(0, 16)}`
}

/**
 * Registers a buyer's creative (AdCP creative_id = our crid, so a bid with that crid finds the same creative) by
 * the URL of its primary asset, for moderation like POST /creatives in URL mode. A creative_id already registered with
 * that asset is unchanged; with another asset, the asset becomes the creative's next version, moderated like a new
 * creative while the approved version keeps playing (creatives/versions.ts). Call inside Store.write, and schedule
 * moderation of what was created after it commits.
 */
export function upsertCreative (call: ToolCall, c: CreativeAsset, crid = c.creative_id!): Upserted {
  const errors: string[] = []
  const warnings: string[] = []
  const format = typeof c.format_id === 'string' ? c.format_id : c.format_id?.id
  if (format !== undefined && !knownFormat(call, format)) errors.push(`format_id ${format} is not a format of this agent; list_creative_formats names them.`)
  const primary = c.assets.primary
  const type = primary.format !== undefined ? typeOfExtension(primary.format) : typeByExtension(primary.url)
  if (type === undefined) errors.push('The media type of assets.primary is unknown: give assets.primary.format (jpeg, png, webp, gif, mp4 or webm).')
  const problem = assetUrlProblem(primary.url, call.config.allowPrivateAssetUrls)
  if (problem !== undefined) errors.push(`assets.primary.url ${problem}.`)
  const first = call.store.creatives.get(creativeIdOfCrid(call.seat.seat_id, crid))
  const newest = first !== undefined ? newestVersion(call.store, first) : undefined
  if (newest !== undefined && newest.source_url === primary.url) return { creative: newest, action: 'unchanged', errors: [], warnings }
  if (errors.length > 0) return { action: 'failed', errors, warnings }
  if (format !== undefined && primary.width !== undefined && primary.height !== undefined) {
    const size = /^dooh_(\d+)x(\d+)_/.exec(format)
    if (size !== null && (Number(size[1]) !== primary.width || Number(size[2]) !== primary.height)) warnings.push(`The asset is ${primary.width}x${primary.height} and format ${format} is ${size[1]}x${size[2]}: screens letterbox it.`)
  }
  const body = { name: c.name, content_type: type!, mode: 'url' as const, source_url: primary.url, crid, ...(c.click_url !== undefined ? { click_url: c.click_url } : {}) }
  if (newest === undefined) return { creative: registerCreative(call, call.seat.seat_id, body, call.now, creativeIdOfCrid(call.seat.seat_id, crid)), action: 'created', errors, warnings }
  const creative = registerNextVersion(call, newest, body, call.now)
  const playing = playingVersion(call.store, first!)
  warnings.push(`Version ${creative.version!} of creative_id ${crid} goes to moderation; ${playing.status === 'approved' && playing.creative_id !== creative.creative_id ? `version ${playing.version ?? 1} plays until it is approved` : 'it plays once approved'}.`)
  return { creative, action: 'updated', errors, warnings }
}
