import { createHmac } from 'node:crypto'
import { sameText } from '../../auth/same-text.js'
import { secret } from '../../store/secrets.js'
import { iso } from '../../clock.js'
import type { Deps } from '../../deps.js'
import { ApiError } from '../../errors.js'
import type { Creative, CreativeCreateRequest, CreativeListQuery } from '../../generated/types.js'
import { ok, route, type RouteDef } from '../../http/route.js'
import type { CreativeRecord } from '../records.js'
import type { Store } from '../../store/store.js'
import { seatPage } from '../../accounts/seat-lists.js'
import { assetUrlProblem, creativeRecord, PLAYABLE, registerCreative, type NewCreative } from '../register.js'

/** Presigned upload URLs: `/uploads/<creative_id>.<expiry, base36>.<HMAC-SHA256 tag>`, like an S3 presigned PUT. */
export class UploadUrls {
  readonly #secret: Buffer

  constructor (store: Store) {
    this.#secret = secret(store, 'uploads')
  }

  #tag (creativeId: string, expires: number): string {
    return createHmac('sha256', this.#secret).update(`${creativeId}.${expires}`).digest('base64url')
  }

  token (creativeId: string, expires: number): string {
    return `${creativeId}.${expires.toString(36)}.${this.#tag(creativeId, expires)}`
  }

  /** The creative a token is for, and its expiry; 403 not_authorized when the token was not issued here. */
  read (token: string): { creativeId: string, expires: number } {
    const [creativeId, exp, tag] = token.split('.')
    const expires = parseInt(exp ?? '', 36)
    if (!creativeId || !tag || !Number.isFinite(expires) || !sameText(tag, this.#tag(creativeId, expires))) {
      throw new ApiError('not_authorized', 'This upload URL is not valid; request a new creative to get one.')
    }
    return { creativeId, expires }
  }
}

/** The buyer's view of a creative: no owner, no storage key; the upload URL while one is awaited. */
export function creativeView (c: CreativeRecord, uploads: UploadUrls, baseUrl: string, maxBytes: number): Creative {
  const { seat_id: _seat, object: _object, upload_expires_at: expires, ...view } = c
  if (c.status !== 'awaiting_upload' || expires === undefined) return view
  return { ...view, upload: { url: `${baseUrl}/uploads/${uploads.token(c.creative_id, expires)}`, method: 'PUT', headers: { 'Content-Type': c.content_type }, expires_at: iso(expires), max_bytes: maxBytes } }
}

/**
 * Creatives (spec, Creatives): POST (URL mode or presigned upload), GET list and one, confirm, and the presigned
 * PUT itself. Moderation runs afterwards, off the request path (src/moderation).
 */
export function creativeRoutes ({ store, outbox, config, objects, moderator }: Deps): RouteDef[] {
  const uploads = new UploadUrls(store)
  const view = (c: CreativeRecord) => creativeView(c, uploads, config.baseUrl, config.maxCreativeBytes)
  const common = { tag: 'Creatives', envelope: 'flat', auth: 'seat', scope: 'campaigns:write', rateGroup: 'creatives' } as const
  const own = (seatId: string, id: string): CreativeRecord => {
    const c = store.creatives.get(id)
    if (c === undefined || c.seat_id.toLowerCase() !== seatId.toLowerCase()) throw new ApiError('creative_not_found', `No creative ${id} belongs to this seat.`, { param: 'id' })
    return c
  }

  return [
    route<CreativeCreateRequest>({
      ...common,
      method: 'post',
      path: '/openrtb/v2/creatives',
      summary: 'Register a creative (URL reference or presigned upload)',
      description: `URL mode: creative_url (or asset_url) is fetched from a public host (http or https, no redirects, at most MAX_CREATIVE_BYTES, CREATIVE_FETCH_TIMEOUT_MS), then moderated; the creative answers 201 in pending_moderation at once. Upload mode (mode=upload): 201 in awaiting_upload with upload.url, a presigned PUT valid for UPLOAD_URL_TTL_SECONDS; PUT the bytes with the declared Content-Type, then POST /creatives/{id}/confirm. Moderation (about 1-2 s for an image, a few seconds for a 15 s video) ends in approved, rejected or needs_review and emits creative.moderation.completed. Playable types: ${PLAYABLE.join(', ')}.`,
      body: 'CreativeCreateRequest',
      data: 'Creative',
      status: 201,
      errors: ['missing_name', 'missing_content_type', 'missing_asset_url', 'unsupported_creative_type'],
      handler: (ctx) => {
        const body = ctx.body
        const type = body.content_type.split(';')[0]!.trim().toLowerCase()
        if (!PLAYABLE.includes(type)) throw new ApiError('unsupported_creative_type', `content_type ${body.content_type} cannot be played; use one of ${PLAYABLE.join(', ')}.`, { param: 'content_type' })
        const mode = body.mode ?? 'url'
        const url = body.creative_url ?? body.asset_url
        if (mode === 'url' && url === undefined) throw new ApiError('missing_asset_url', 'URL mode needs creative_url or asset_url (or use mode=upload).', { param: 'creative_url' })
        if (mode === 'url') {
          const problem = assetUrlProblem(url!, config.allowPrivateAssetUrls)
          if (problem !== undefined) throw new ApiError('invalid_parameter', `creative_url ${problem}.`, { param: body.creative_url !== undefined ? 'creative_url' : 'asset_url' })
        }
        const seatId = ctx.principal!.seat!.seat_id
        const fields: NewCreative = { name: body.name, content_type: type, mode }
        if (url !== undefined && mode === 'url') fields.source_url = url
        if (mode === 'upload') fields.upload_expires_at = ctx.now + config.uploadUrlTtlSeconds * 1000
        if (body.advertiser_domain !== undefined) fields.advertiser_domain = body.advertiser_domain
        if (body.click_url !== undefined) fields.click_url = body.click_url
        if (body.declared_categories !== undefined) fields.declared_categories = body.declared_categories
        const creative = registerCreative({ store, outbox }, seatId, fields, ctx.now)
        const id = creative.creative_id
        if (!ctx.dryRun && mode === 'url') moderator.schedule(id)
        return ok(view(creative), 201)
      }
    }),
    route<undefined, CreativeListQuery>({
      ...common,
      method: 'get',
      path: '/openrtb/v2/creatives',
      summary: 'List the seat\'s creatives with their moderation status, newest first',
      querySchema: 'CreativeListQuery',
      data: 'CreativeList',
      handler: (ctx) => {
        const status = ctx.q.status === 'pending' ? 'pending_moderation' : ctx.q.status
        const { items, cursor } = seatPage(store, 'creative', ctx.principal!.seat!.seat_id, { ...ctx.q, ...(status !== undefined ? { status } : {}) }, (id) => store.creatives.get(id), view)
        return ok({ creatives: items, cursor })
      }
    }),
    route({
      ...common,
      method: 'get',
      path: '/openrtb/v2/creatives/:id',
      summary: 'A creative with its IAB classification, content flags, age rating, brands and content analysis',
      data: 'Creative',
      errors: ['creative_not_found'],
      handler: (ctx) => ok(view(own(ctx.principal!.seat!.seat_id, ctx.params.id!)))
    }),
    route({
      ...common,
      method: 'post',
      path: '/openrtb/v2/creatives/:id/confirm',
      summary: 'Confirm a presigned upload finished; moderation starts',
      description: 'Only for a creative in awaiting_upload whose bytes were PUT. 409 invalid_transition before the upload or in another status; 410 expired once the upload URL has expired without an upload.',
      data: 'Creative',
      errors: ['creative_not_found', 'invalid_transition', 'expired'],
      exclusive: (ctx) => creativeRecord(ctx.params.id!),
      handler: (ctx) => {
        const c = own(ctx.principal!.seat!.seat_id, ctx.params.id!)
        if (c.status !== 'awaiting_upload') throw new ApiError('invalid_transition', `The creative is ${c.status}; only an awaiting_upload creative can be confirmed.`, { status: c.status })
        if (c.object === undefined) {
          if ((c.upload_expires_at ?? 0) <= ctx.now) throw new ApiError('expired', 'The upload URL expired before anything was uploaded; register the creative again.')
          throw new ApiError('invalid_transition', 'Nothing was uploaded yet: PUT the bytes to upload.url first.')
        }
        const now = iso(ctx.now)
        const next: CreativeRecord = { ...c, status: 'pending_moderation', updated_at: now }
        delete next.upload_expires_at
        store.creatives.putSync(c.creative_id, next)
        outbox.append('creative.confirmed', `creative:${c.creative_id}`, { creative_id: c.creative_id }, c.seat_id)
        if (!ctx.dryRun) moderator.schedule(c.creative_id)
        return ok(view(next))
      }
    }),
    route({
      method: 'put',
      path: '/uploads/:token',
      summary: 'Presigned upload of a creative\'s bytes',
      tag: 'Creatives',
      envelope: 'flat',
      auth: 'none',
      rateGroup: 'uploads',
      rawBody: true,
      maxBodyBytes: config.maxCreativeBytes,
      errors: ['not_authorized', 'expired', 'invalid_transition', 'creative_not_found'],
      // The token begins with the creative's id; the handler checks its signature.
      exclusive: (ctx) => creativeRecord(ctx.params.token!.split('.')[0]!),
      handler: (ctx) => {
        const { creativeId, expires } = uploads.read(ctx.params.token!)
        if (expires <= ctx.now) throw new ApiError('expired', 'This upload URL has expired; register the creative again.')
        const c = store.creatives.get(creativeId)
        if (c === undefined) throw new ApiError('creative_not_found', 'The creative of this upload URL no longer exists.')
        if (c.status !== 'awaiting_upload') throw new ApiError('invalid_transition', `The creative is ${c.status}; its upload is closed.`, { status: c.status })
        const type = (ctx.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase()
        if (type !== c.content_type) throw new ApiError('unsupported_media_type', `Send Content-Type: ${c.content_type}, as declared.`)
        const bytes = ctx.body as unknown as Buffer
        if (bytes.length === 0) throw new ApiError('invalid_parameter', 'The upload is empty.', { param: 'body' })
        const stored = ctx.dryRun ? { bytes: bytes.length, sha256: '' } : objects.put(creativeId, bytes)
        store.creatives.putSync(creativeId, { ...c, object: creativeId, asset: { bytes: stored.bytes, sha256: stored.sha256 }, updated_at: iso(ctx.now) })
        return ok({ creative_id: creativeId, bytes: stored.bytes, sha256: stored.sha256 })
      }
    })
  ]
}
