import type { Deps } from '../../deps.js'
import { ApiError } from '../../errors.js'
import { raw, route, type Result, type RouteDef } from '../../http/route.js'
import type { ObjectStore } from '../../store/objects.js'
import type { Store } from '../../store/store.js'

/**
 * The bytes of an approved creative (ETag: its SHA-256; 304 when the client has them), else 404 creative_not_found.
 * On a cluster node the creative's row can arrive a moment before its bytes: 503 with Retry-After until they do.
 */
export function serveAsset (store: Store, objects: ObjectStore, creativeId: string, ifNoneMatch: string | undefined): Result {
  const creative = store.creatives.get(creativeId)
  if (creative === undefined || creative.status !== 'approved' || creative.object === undefined) throw new ApiError('creative_not_found', `No approved creative ${creativeId}.`, { param: 'creative_id' })
  const type = creative.asset?.media_type ?? creative.content_type
  const etag = `"${creative.asset?.sha256 ?? creative.creative_id}"`
  if (ifNoneMatch === etag) return raw('', type, 304, { ETag: etag })
  const bytes = objects.read(creative.object)
  if (bytes === undefined) throw new ApiError('service_unavailable', 'This asset is on its way to this node of the cluster; retry in a second.', { retry_after_seconds: 1 }, { 'Retry-After': '1' })
  return raw(bytes, type, 200, { ETag: etag })
}

/**
 * GET /assets/:creative_id: the moderated asset of an approved creative, for exchanges' players that render the
 * markup oohbid bids with. Creative ids are unguessable; nothing unapproved is served.
 */
export function assetRoute ({ store, objects }: Deps): RouteDef {
  return route({
    method: 'get',
    path: '/assets/:creative_id',
    summary: 'The moderated asset of an approved creative',
    description: 'What the markup of oohbid\'s bids to exchanges points at (an image tag, or the MediaFile of a VAST ad). ETag is the asset\'s SHA-256; cacheable for a day.',
    tag: 'Exchange',
    envelope: 'flat',
    auth: 'none',
    rateGroup: 'public',
    produces: 'application/octet-stream',
    cacheSeconds: 86_400,
    errors: ['creative_not_found', 'service_unavailable'],
    handler: (ctx) => serveAsset(store, objects, ctx.params.creative_id!, ctx.headers['if-none-match'])
  })
}
