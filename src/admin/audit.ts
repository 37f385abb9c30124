import { ApiError } from '../errors.js'
import type { AuditEvent } from '../generated/types.js'
import { pageOf } from '../http/cursor.js'
import { ok, route, type RouteDef } from '../http/route.js'
import type { OutboxEvent } from '../store/records.js'
import type { Deps } from '../deps.js'
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
      const start = after !== undefined ? Number(after) : undefined
      if (start !== undefined && !Number.isInteger(start)) throw new ApiError('invalid_parameter', 'cursor is not valid.', { param: 'cursor' })
      const entries = store.audit.getRange({ reverse: true, ...(start !== undefined ? { start, exclusiveStart: true } : {}) })
      const page = pageOf(entries, limit, (event) => subject !== null && event.subject !== subject ? undefined : event, (key) => Buffer.from(String(key)).toString('base64url'))
      return ok({ events: page.items.map(auditView), cursor: page.cursor })
    }
  })
}
