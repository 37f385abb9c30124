import { iso } from '../clock.js'
import type { Deps } from '../deps.js'
import { ApiError } from '../errors.js'
import type { CreativeListQuery, CreativeReviewRequest } from '../generated/types.js'
import { ok, route, type RouteDef } from '../http/route.js'
import { completedEvent } from '../moderation/moderator.js'
import type { CreativeRecord } from '../store/records.js'
import { creativeView, UploadUrls } from '../creatives/routes/creatives.js'

/**
 * Human review of moderation: needs_review -> approved | rejected, and rejected -> approved (an appeal upheld). Each
 * review keeps its reason, is audited, and emits creative.moderation.completed to the seat.
 */
export function adminCreativeRoutes ({ store, outbox, config }: Deps): RouteDef[] {
  const uploads = new UploadUrls(store)
  const common = { tag: 'Operator', envelope: 'flat', auth: 'admin', rateGroup: 'ops' } as const
  return [
    route<undefined, CreativeListQuery>({
      ...common,
      method: 'get',
      path: '/admin/v1/creatives',
      summary: 'The review queue: creatives by status (default needs_review), oldest first',
      querySchema: 'CreativeListQuery',
      handler: (ctx) => {
        const status = ctx.q.status === 'pending' ? 'pending_moderation' : ctx.q.status ?? 'needs_review'
        const items = [...store.creatives.getRange()].map(({ value }) => value).filter((c) => c.status === status)
          .sort((a, b) => a.created_at.localeCompare(b.created_at)).slice(0, ctx.q.limit ?? 50)
        return ok({ creatives: items.map((c) => ({ ...creativeView(c, uploads, config.baseUrl, config.maxCreativeBytes), seat_id: c.seat_id })) })
      }
    }),
    route<CreativeReviewRequest>({
      ...common,
      method: 'post',
      path: '/admin/v1/creatives/:id/review',
      summary: 'Approve or reject a creative in needs_review or rejected, with a reason',
      body: 'CreativeReviewRequest',
      data: 'Creative',
      errors: ['creative_not_found', 'invalid_transition'],
      handler: (ctx) => {
        const c = store.creatives.get(ctx.params.id!)
        if (c === undefined) throw new ApiError('creative_not_found', `No creative ${ctx.params.id}.`, { param: 'id' })
        const allowed = c.status === 'needs_review' || (c.status === 'rejected' && ctx.body.decision === 'approved')
        if (!allowed) throw new ApiError('invalid_transition', `A ${c.status} creative cannot be ${ctx.body.decision} on review.`, { status: c.status })
        const now = iso(ctx.now)
        const next: CreativeRecord = { ...c, status: ctx.body.decision, updated_at: now, reviews: [...(c.reviews ?? []), { decision: ctx.body.decision, reason: ctx.body.reason, at: now, from: c.status }] }
        store.creatives.putSync(c.creative_id, next)
        outbox.append('creative.moderation.completed', `creative:${c.creative_id}`, completedEvent(next), c.seat_id)
        outbox.append('audit.creative.reviewed', `creative:${c.creative_id}`, { actor: 'operator', from: c.status, to: ctx.body.decision, reason: ctx.body.reason }, c.seat_id)
        return ok(creativeView(next, uploads, config.baseUrl, config.maxCreativeBytes))
      }
    })
  ]
}
