import { createHash, randomUUID } from 'node:crypto'
import { iso } from '../clock.js'
import { indexForSeat } from '../accounts/seat-lists.js'
import { callbackUrlProblem } from '../net/url-guard.js'
import type { Outbox } from '../store/outbox.js'
import type { CreativeRecord } from './records.js'
import { playingVersion } from './versions.js'
import type { Store } from '../store/store.js'

/** The media types a screen's player can show. */
export const PLAYABLE = ['image/jpeg', 'image/png', 'image/webp', 'image/gif', 'video/mp4', 'video/webm']

/**
 * Why an asset URL cannot be fetched for moderation, or undefined when it can: http or https, to a public address
 * (http URLs are checked as their https form, since the guard's rules are the same). allowPrivate is the
 * ALLOW_PRIVATE_ASSET_URLS test setting.
 */
export function assetUrlProblem (url: string, allowPrivate: boolean): string | undefined {
  return /^https?:/i.test(url) ? callbackUrlProblem(url.replace(/^http:/i, 'https:'), allowPrivate) : 'must use http or https'
}

/**
 * The record a cluster node locks (RouteDef.exclusive) to rewrite a creative: an upload, its confirmation and the
 * operator's review each read the status they move on from, which another node may have just changed.
 */
export function creativeRecord (creativeId: string): string {
  return `creative:${creativeId}`
}

/** What a new creative is made of, from POST /creatives or from a bid's markup (content_type: a PLAYABLE type). */
export type NewCreative = Pick<CreativeRecord, 'name' | 'content_type' | 'mode'> &
  Partial<Pick<CreativeRecord, 'source_url' | 'advertiser_domain' | 'click_url' | 'declared_categories' | 'crid' | 'upload_expires_at' | 'version' | 'previous_version'>>

/**
 * The creative id a seat's crid registers as (its first version; later ones add their number): derived from both, so
 * that the next bid with that crid finds it without an index, and two seats' equal crids never meet.
 */
export function creativeIdOfCrid (seatId: string, crid: string, version = 1): string {
  const named = version === 1 ? `${seatId.toLowerCase()}\u0000${crid}` : `${seatId.toLowerCase()}\u0000${crid}\u0000${version}`
  return `cr_${createHash('sha256').update(named).digest('hex').slice(0, 32)}`
}

/**
 * The seat's creative a bid's crid names (its creative_id, or the crid it was registered by), at the version that
 * plays (creatives/versions.ts).
 */
export function seatCreativeByCrid (store: Store, seatId: string, crid: string): CreativeRecord | undefined {
  const own = (c: CreativeRecord | undefined) => c !== undefined && c.seat_id.toLowerCase() === seatId.toLowerCase() ? c : undefined
  const named = own(store.creatives.get(crid)) ?? own(store.creatives.get(creativeIdOfCrid(seatId, crid)))
  return named !== undefined ? playingVersion(store, named) : undefined
}

/**
 * Records a new creative for a seat (URL mode: pending_moderation; upload mode: awaiting_upload) with its seat-list
 * index and creative.created. Call inside Store.write; schedule URL-mode moderation after it (Moderator.schedule).
 */
export function registerCreative ({ store, outbox }: { store: Store, outbox: Outbox }, seatId: string, c: NewCreative, now: number, id = `cr_${randomUUID().replace(/-/g, '')}`): CreativeRecord {
  const stamp = iso(now)
  const creative: CreativeRecord = { ...c, creative_id: id, seat_id: seatId, status: c.mode === 'url' ? 'pending_moderation' : 'awaiting_upload', created_at: stamp, updated_at: stamp, moderated_at: null }
  if (c.advertiser_domain !== undefined) creative.advertiser_domain = c.advertiser_domain.toLowerCase()
  store.creatives.putSync(id, creative)
  indexForSeat(store, 'creative', seatId, now, id)
  outbox.append('creative.created', `creative:${id}`, { creative_id: id, mode: c.mode, content_type: c.content_type }, seatId)
  return creative
}

/**
 * Records a seat's new asset for a crid it registered as the creative's next version (pending_moderation, like a new
 * URL-mode creative), linked to the version it follows. Call inside Store.write; schedule its moderation after.
 */
export function registerNextVersion (deps: { store: Store, outbox: Outbox }, newest: CreativeRecord, c: NewCreative & { crid: string }, now: number): CreativeRecord {
  const version = (newest.version ?? 1) + 1
  const creative = registerCreative(deps, newest.seat_id, { ...c, version, previous_version: newest.creative_id }, now, creativeIdOfCrid(newest.seat_id, c.crid, version))
  deps.store.creatives.putSync(newest.creative_id, { ...newest, next_version: creative.creative_id, updated_at: creative.created_at })
  return creative
}
