import { ApiError } from '../../errors.js'
import type { AuditEvent } from '../../generated/types.js'
import { ok, route, type RouteDef } from '../../http/route.js'
import type { OutboxEvent } from '../../store/records.js'
import type { Deps } from '../../deps.js'
import { pageParams, pageQuery } from './paging.js'

function auditView (e: OutboxEvent): AuditEvent {
  const { actor, reason, ...data } = e.data as { actor?: string, reason?: string | null }
  const view: AuditEvent = { id: e.id, type: e.type, actor: actor ?? 'operator', subject: e.subject, at: e.at, data }
  if (typeof reason === 'string') view.reason = reason
  return view
}

/** GET /admin/v1/audit: operator actions, newest first. */
export function adminAuditRoute ({ store }: Deps): RouteDef {
  return route({
    method: 'get',
    path: '/admin/v1/audit',
    summary: 'List audited operator actions, newest first',
    tag: 'Operator',
    envelope: 'flat',
    auth: 'admin',
    rateGroup: 'ops',
    query: [{ name: 'subject', description: 'Only events about this subject, e.g. seat:acme.', schema: { type: 'string' } }, ...pageQuery],
    data: 'AuditList',
    handler: (ctx) => {
      const { limit, after } = pageParams(ctx.query)
      const subject = ctx.query.get('subject')
      const events: AuditEvent[] = []
      let last: number | undefined
      let more = false
      const start = after !== undefined ? Number(after) : undefined
      if (start !== undefined && !Number.isInteger(start)) throw new ApiError('invalid_parameter', 'cursor is not valid.', { param: 'cursor' })
      for (const { key, value } of store.audit.getRange({ reverse: true, ...(start !== undefined ? { start, exclusiveStart: true } : {}) })) {
        if (subject !== null && value.subject !== subject) continue
        if (events.length === limit) { more = true; break }
        events.push(auditView(value))
        last = key
      }
      return ok({ events, cursor: { next: more && last !== undefined ? Buffer.from(String(last)).toString('base64url') : null, has_more: more } })
    }
  })
}
