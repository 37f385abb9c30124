import { iso } from '../clock.js'
import { ApiError } from '../errors.js'
import type { CreativeReviewRequest } from '../generated/types.js'
import type { Outbox } from '../store/outbox.js'
import type { CreativeRecord } from '../creatives/records.js'
import type { Store } from '../store/store.js'
import { completedEvent } from './moderator.js'

/**
 * The operator's review of what moderation could not decide (needs_review), or of a rejection to overturn: the
 * decision is kept in the creative's review history, told to the seat (creative.moderation.completed) and audited.
 * Call inside Store.write.
 */
export function reviewCreative (store: Store, outbox: Outbox, creativeId: string, decision: CreativeReviewRequest['decision'], reason: string, now: number): CreativeRecord {
  const c = store.creatives.get(creativeId)
  if (c === undefined) throw new ApiError('creative_not_found', `No creative ${creativeId}.`, { param: 'id' })
  const allowed = c.status === 'needs_review' || (c.status === 'rejected' && decision === 'approved')
  if (!allowed) throw new ApiError('invalid_transition', `A ${c.status} creative cannot be ${decision} on review.`, { status: c.status })
  const at = iso(now)
  const next: CreativeRecord = { ...c, status: decision, updated_at: at, reviews: [...(c.reviews ?? []), { decision, reason, at, from: c.status }] }
  store.creatives.putSync(c.creative_id, next)
  outbox.append('creative.moderation.completed', `creative:${c.creative_id}`, completedEvent(next), c.seat_id)
  outbox.append('audit.creative.reviewed', `creative:${c.creative_id}`, { actor: 'operator', from: c.status, to: decision, reason }, c.seat_id)
  return next
}
