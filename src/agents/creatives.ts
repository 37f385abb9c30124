import type { SyncCreativesRequest } from '../generated/types.js'
import { checkAccount, record, type ToolCall } from './call.js'
import { adcpStatusOf, upsertCreative } from './creative-upsert.js'
import { attachCreative } from './media-buys.js'

/**
 * sync_creatives: each creative registered by its buyer's creative_id and sent to moderation (its AdCP status is the
 * moderation status: pending_review until decided), then attached to the packages assignments names; a package plays
 * from its creative's approval. One creative's failure is its own result; the others are kept.
 */
export function syncCreatives (call: ToolCall, args: Record<string, unknown>): Record<string, unknown> {
  const req = args as unknown as SyncCreativesRequest
  checkAccount(call, req.account)
  const dryRun = call.dryRun || req.dry_run === true
  const assignments = Array.isArray(req.assignments)
    ? req.assignments.map((a) => [a.creative_id, a.package_id, a.weight] as const)
    : Object.entries(req.assignments ?? {}).flatMap(([creativeId, refs]) => (refs ?? []).map((ref) => [creativeId, ref, undefined] as const))
  const created: string[] = []
  const results = record({ ...call, dryRun }, () => req.creatives.map((c) => {
    const done = upsertCreative(call, c)
    if (done.action === 'created' || done.action === 'updated') created.push(done.creative!.creative_id)
    const assigned: string[] = []
    const assignmentErrors: Record<string, string> = {}
    if (done.creative !== undefined) {
      for (const [, ref, weight] of assignments.filter(([creativeId]) => creativeId === c.creative_id)) {
        const outcome = attachCreative(call, c.creative_id!, ref, weight)
        if (outcome === undefined) assigned.push(ref)
        else assignmentErrors[ref] = outcome
      }
    }
    return {
      creative_id: c.creative_id,
      action: done.action,
      ...(done.creative !== undefined ? { platform_id: done.creative.creative_id, status: adcpStatusOf(done.creative.status) } : {}),
      ...(done.errors.length > 0 ? { errors: done.errors } : {}),
      ...(done.warnings.length > 0 ? { warnings: done.warnings } : {}),
      ...(assigned.length > 0 ? { assigned_to: assigned } : {}),
      ...(Object.keys(assignmentErrors).length > 0 ? { assignment_errors: assignmentErrors } : {})
    }
  }))
  if (!dryRun) for (const id of created) call.moderator.schedule(id)
  return { ...(dryRun ? { dry_run: true } : {}), creatives: results, sandbox: call.seat.status === 'sandbox' }
}
