import { seatItems } from '../accounts/seat-lists.js'
import { ApiError } from '../errors.js'
import type { ListCreativesRequest } from '../generated/types.js'
import type { CreativeRecord } from '../creatives/records.js'
import { creativeIdOfCrid } from '../creatives/register.js'
import { playingVersion } from '../creatives/versions.js'
import { checkAccount, type ToolCall } from './call.js'
import { formatOfSize } from './catalog.js'
import { adcpStatusOf, rejectionOf } from './creative-upsert.js'
import { seatMediaBuys } from './seat-buys.js'
import type { MediaBuyRecord } from './records.js'

const PAGE = 50

type SortField = NonNullable<NonNullable<ListCreativesRequest['sort']>['field']>
type Filters = NonNullable<ListCreativesRequest['filters']>

/** A package that names a creative, as list_creatives reports it. */
interface Assigned { package_id: string, buyer_ref?: string, assigned_date: string, media_buy_id: string, media_buy_ref: string }

/** A creative with what list_creatives filters and sorts it by. */
interface Listed { creative: CreativeRecord, id: string, status: string, assigned: Assigned[] }

/** Every package of the seat's media buys that names each creative, by the buyer's creative_id. */
function assignmentsOf (buys: MediaBuyRecord[]): Map<string, Assigned[]> {
  const by = new Map<string, Assigned[]>()
  for (const buy of buys) {
    for (const p of buy.packages) {
      for (const id of p.creative_ids) {
        const list = by.get(id) ?? []
        list.push({ package_id: p.package_id, ...(p.buyer_ref !== undefined ? { buyer_ref: p.buyer_ref } : {}), assigned_date: p.assigned_at?.[id] ?? buy.created_at, media_buy_id: buy.media_buy_id, media_buy_ref: buy.buyer_ref })
        by.set(id, list)
      }
    }
  }
  return by
}

/** The names filters give, as filters_applied reports them, and whether a creative meets them all. */
function matcher (f: Filters): { applied: string[], matches: (l: Listed) => boolean } {
  const checks: Array<[string, (l: Listed) => boolean]> = []
  const time = (s: string, param: string): number => {
    const ms = Date.parse(s)
    if (Number.isNaN(ms)) throw new ApiError('invalid_parameter', `filters.${param} must be an ISO 8601 date-time.`, { param: `filters.${param}` })
    return ms
  }
  if (f.statuses !== undefined) checks.push(['statuses', (l) => (f.statuses as string[]).includes(l.status)])
  if (f.creative_ids !== undefined) checks.push(['creative_ids', (l) => f.creative_ids!.includes(l.id) || f.creative_ids!.includes(l.creative.creative_id)])
  if (f.name_contains !== undefined) {
    const part = f.name_contains.toLowerCase()
    checks.push(['name_contains', (l) => l.creative.name.toLowerCase().includes(part)])
  }
  if (f.format_types !== undefined) checks.push(['format_types', () => (f.format_types as string[]).includes('dooh')])
  for (const [param, field, after] of [['created_after', 'created_at', true], ['created_before', 'created_at', false], ['updated_after', 'updated_at', true], ['updated_before', 'updated_at', false]] as const) {
    const bound = f[param]
    if (bound === undefined) continue
    const ms = time(bound, param)
    checks.push([param, (l) => after ? Date.parse(l.creative[field]) > ms : Date.parse(l.creative[field]) < ms])
  }
  if (f.media_buy_ids !== undefined) checks.push(['media_buy_ids', (l) => l.assigned.some((a) => f.media_buy_ids!.includes(a.media_buy_id))])
  if (f.buyer_refs !== undefined) checks.push(['buyer_refs', (l) => l.assigned.some((a) => f.buyer_refs!.includes(a.media_buy_ref))])
  if (f.assigned_to_packages !== undefined) checks.push(['assigned_to_packages', (l) => l.assigned.some((a) => f.assigned_to_packages!.includes(a.package_id) || (a.buyer_ref !== undefined && f.assigned_to_packages!.includes(a.buyer_ref)))])
  if (f.unassigned !== undefined) checks.push(['unassigned', (l) => (l.assigned.length === 0) === f.unassigned])
  return { applied: checks.map(([name]) => name), matches: (l) => checks.every(([, check]) => check(l)) }
}

/** What a creative sorts by: the field's value, then its platform id, so that every creative has its own place. */
function sortKey (l: Listed, field: SortField): [string | number, string] {
  const value = { created_date: () => Date.parse(l.creative.created_at), updated_date: () => Date.parse(l.creative.updated_at), name: () => l.creative.name.toLowerCase(), status: () => l.status, assignment_count: () => l.assigned.length }[field]()
  return [value, l.creative.creative_id]
}

function compare (a: [string | number, string], b: [string | number, string]): number {
  if (a[0] !== b[0]) return a[0] < b[0] ? -1 : 1
  return a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0
}

/**
 * list_creatives: the seat's creatives however they were registered, each with its AdCP status as moderation left it
 * (a rejection with its reason) and the packages naming it. A page's cursor names the sort key of its last creative,
 * so creatives synced meanwhile neither repeat nor skip one.
 */
export function listCreatives (call: ToolCall, args: Record<string, unknown>): Record<string, unknown> {
  const req = args as ListCreativesRequest
  checkAccount(call, req.account)
  const field: SortField = req.sort?.field ?? 'created_date'
  const direction = req.sort?.direction ?? 'desc'
  const assigned = assignmentsOf(seatMediaBuys(call.store, call.seat.seat_id))
  const { applied, matches } = matcher(req.filters ?? {})
  // A creative re-synced with another asset is listed once, as its newest version.
  const all = seatItems(call.store, 'creative', call.seat.seat_id, (id) => call.store.creatives.get(id)).filter((c) => c.next_version === undefined).map((c): Listed => {
    const id = c.crid ?? c.creative_id
    return { creative: c, id, status: adcpStatusOf(c.status), assigned: assigned.get(id) ?? [] }
  })
  const matching = all.filter(matches)
  const ordered = matching.map((l) => ({ l, key: sortKey(l, field) })).sort((a, b) => direction === 'asc' ? compare(a.key, b.key) : compare(b.key, a.key))
  let start = 0
  if (req.pagination?.cursor !== undefined) {
    const after = cursorKey(req.pagination.cursor)
    start = ordered.findIndex(({ key }) => direction === 'asc' ? compare(key, after) > 0 : compare(key, after) < 0)
    if (start < 0) start = ordered.length
  }
  const page = ordered.slice(start, start + (req.pagination?.max_results ?? PAGE))
  const more = start + page.length < ordered.length
  const statusSummary: Record<string, number> = { processing: 0, approved: 0, pending_review: 0, rejected: 0, archived: 0 }
  for (const l of matching) statusSummary[l.status]!++
  return {
    query_summary: { total_matching: matching.length, returned: page.length, filters_applied: applied, sort_applied: { field, direction } },
    pagination: { has_more: more, total_count: matching.length, ...(more ? { cursor: Buffer.from(JSON.stringify(page.at(-1)!.key)).toString('base64url') } : {}) },
    creatives: page.map(({ l }) => view(call, l, req)),
    format_summary: { dooh: matching.length },
    status_summary: statusSummary,
    sandbox: call.seat.status === 'sandbox'
  }
}

/** A page cursor's sort key; 400 invalid_parameter for one this agent did not give. */
function cursorKey (cursor: string): [string | number, string] {
  try {
    const key = JSON.parse(Buffer.from(cursor, 'base64url').toString()) as unknown
    if (Array.isArray(key) && key.length === 2 && (typeof key[0] === 'string' || typeof key[0] === 'number') && typeof key[1] === 'string') return key as [string | number, string]
  } catch {}
  throw new ApiError('invalid_parameter', 'pagination.cursor is not one this agent gave.', { param: 'pagination.cursor' })
}

/** A re-synced creative's version, and the earlier version that plays while this one is not approved. */
function versionOf (call: ToolCall, c: CreativeRecord): Record<string, unknown> {
  if (c.version === undefined) return {}
  const first = call.store.creatives.get(creativeIdOfCrid(c.seat_id, c.crid!))
  const playing = first !== undefined ? playingVersion(call.store, first) : c
  return { version: c.version, ...(playing.creative_id !== c.creative_id ? { playing_version: playing.version ?? 1, playing_platform_id: playing.creative_id } : {}) }
}

function view (call: ToolCall, l: Listed, req: ListCreativesRequest): Record<string, unknown> {
  const c = l.creative
  const asset = c.asset
  const reason = rejectionOf(c)
  const width = asset?.width
  const height = asset?.height
  const video = (asset?.media_type ?? c.content_type).startsWith('video/')
  const primary = c.source_url !== undefined && width !== undefined && height !== undefined
    ? { primary: { url: c.source_url, width, height, ...(video && asset?.duration_seconds !== undefined ? { duration_ms: Math.round(asset.duration_seconds * 1000) } : {}) } }
    : undefined
  return {
    creative_id: l.id,
    name: c.name,
    format_id: formatOfSize(call, width, height),
    status: l.status,
    created_date: c.created_at,
    updated_date: c.updated_at,
    ...(primary !== undefined ? { assets: primary } : {}),
    ...(req.include_assignments !== false ? { assignments: { assignment_count: l.assigned.length, assigned_packages: l.assigned.map(({ package_id: packageId, buyer_ref: ref, assigned_date: date }) => ({ package_id: packageId, ...(ref !== undefined ? { buyer_ref: ref } : {}), assigned_date: date })) } } : {}),
    ...(req.include_snapshot === true ? { snapshot_unavailable_reason: 'SNAPSHOT_UNSUPPORTED' } : {}),
    ext: { oohbid: { platform_id: c.creative_id, moderation_status: c.status, ...(reason !== undefined ? { rejection_reason: reason } : {}), content_type: c.content_type, ...versionOf(call, c) } }
  }
}
