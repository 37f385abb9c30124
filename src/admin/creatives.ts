import type { Deps } from '../deps.js'
import type { CreativeListQuery, CreativeReviewRequest } from '../generated/types.js'
import { ok, route, type RouteDef } from '../http/route.js'
import { reviewCreative } from '../moderation/review.js'
import { creativeView, UploadUrls } from '../creatives/routes/creatives.js'
import { creativeRecord } from '../creatives/register.js'

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
      exclusive: (ctx) => creativeRecord(ctx.params.id!),
      handler: (ctx) => {
        const next = reviewCreative(store, outbox, ctx.params.id!, ctx.body.decision, ctx.body.reason, ctx.now)
        return ok(creativeView(next, uploads, config.baseUrl, config.maxCreativeBytes))
      }
    })
  ]
}
