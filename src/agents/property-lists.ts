import { randomBytes, randomUUID } from 'node:crypto'
import { indexForSeat, seatItems, unindexForSeat } from '../accounts/seat-lists.js'
import { digestKey } from '../auth/keys.js'
import { matchingScreens } from '../campaigns/targeting.js'
import { iso } from '../clock.js'
import { ApiError } from '../errors.js'
import type { CreatePropertyListRequest, DeletePropertyListRequest, GetPropertyListRequest, ListPropertyListsRequest, PropertyListReference, PropertyListSources, UpdatePropertyListRequest } from '../generated/types.js'
import type { ScreenRecord } from '../inventory/records.js'
import { publisherDomainOf } from '../inventory/sellers.js'
import { agentUrl, checkAccount, record, type ToolCall } from './call.js'
import { coverageGaps, listTest, SCREEN_FILTERS, Seen, type ScreenFacts } from './property-list-match.js'
import type { PropertyListRecord, PropertySource, ScreenFilters } from './records.js'

const PAGE = 100
const LISTS_PAGE = 50

/** base_properties and filters in AdCP 3's form: an AdCP 2 {include, exclude} becomes an identifiers source and exclusions. */
function normalized (base: PropertyListSources | undefined, filters: ScreenFilters & Record<string, unknown> | undefined): Pick<PropertyListRecord, 'base_properties' | 'filters'> {
  if (base === undefined || Array.isArray(base)) return { ...(base !== undefined ? { base_properties: base as PropertySource[] } : {}), ...(filters !== undefined ? { filters } : {}) }
  const ids = (list: typeof base.include) => (list ?? []).map((i) => ({ type: i.identifier_type, value: i.identifier_value }))
  const excluded = ids(base.exclude)
  return {
    ...(base.include !== undefined ? { base_properties: [{ selection_type: 'identifiers', identifiers: ids(base.include) }] } : {}),
    ...(filters !== undefined || excluded.length > 0 ? { filters: { ...filters, ...(excluded.length > 0 ? { exclude_identifiers: [...(filters?.exclude_identifiers ?? []), ...excluded] } : {}) } } : {})
  }
}

function factsOf (call: Pick<ToolCall, 'config' | 'store'>, s: ScreenRecord): ScreenFacts {
  return {
    screen_id: s.screen_id,
    device_id: s.device_id,
    venue_type: s.location.venue_type,
    city: s.location.city,
    country: s.location.country,
    domain: publisherDomainOf(call.config.operator, call.store, s.partner_id),
    features: { fein: s.capabilities.fein, video: s.capabilities.video, audio: s.capabilities.audio, touch: s.capabilities.touch, floor_cpm: s.floor_price_cpm }
  }
}

/** Whether a list keeps a screen: the one rule get_property_list, get_products and create_media_buy apply. */
export function screenTest (call: Pick<ToolCall, 'config' | 'store'>, list: PropertyListRecord): (s: ScreenRecord) => boolean {
  const test = listTest(list)
  return (s) => test(factsOf(call, s))
}

/** Every screen on sale (the adslots index of the enabled sources), by screen_id. */
function screensOnSale (call: ToolCall): ScreenRecord[] {
  const { ids } = matchingScreens(call.store, call.inventory.sourcesEnabled(), {}, undefined, Number.MAX_SAFE_INTEGER)
  return ids.sort().map((id) => call.store.screens.get(id)).filter((s): s is ScreenRecord => s !== undefined)
}

/** The list a request names: the seat's own, or another seat's with its auth_token; 404 property_list_not_found otherwise. */
function namedList (call: Pick<ToolCall, 'store' | 'seat'>, listId: string, token: string | undefined, param: string): PropertyListRecord {
  const list = call.store.propertyLists.get(listId)
  const own = list !== undefined && list.seat_id.toLowerCase() === call.seat.seat_id.toLowerCase()
  const tokenFits = token !== undefined && digestKey(token) === list?.token_sha256
  if (list === undefined || (!own && !tokenFits)) throw new ApiError('property_list_not_found', `No property list ${listId}${list !== undefined ? ' of this seat (another seat\'s list needs its auth_token)' : ''}.`, { param })
  if (token !== undefined && !tokenFits) throw new ApiError('not_authorized', `auth_token is not list ${listId}'s.`, { param: 'auth_token' })
  return list
}

/**
 * The list a get_products or package reference names: one of this agent's, the seat's own or shared with its
 * auth_token. A list of another governance agent is not fetched (unsupported_feature).
 */
export function referencedList (call: ToolCall, ref: PropertyListReference, param: string): PropertyListRecord {
  const ours = agentUrl(call)
  if (ref.agent_url !== undefined && ref.agent_url.replace(/\/+$/, '') !== ours) throw new ApiError('unsupported_feature', `Property lists of other agents are not supported: ${ref.agent_url} is not this agent (${ours}); create the list here with create_property_list.`, { param: `${param}.agent_url` })
  return namedList(call, ref.list_id, ref.auth_token, `${param}.list_id`)
}

function listView (list: PropertyListRecord, count?: number): Record<string, unknown> {
  return {
    list_id: list.list_id,
    name: list.name,
    ...(list.description !== undefined ? { description: list.description } : {}),
    principal: list.seat_id,
    ...(list.base_properties !== undefined ? { base_properties: list.base_properties } : {}),
    ...(list.filters !== undefined ? { filters: list.filters } : {}),
    ...(list.brand !== undefined ? { brand: list.brand } : {}),
    created_at: list.created_at,
    updated_at: list.updated_at,
    ...(count !== undefined ? { property_count: count } : {})
  }
}

/** The filters a list keeps that say nothing of a screen. */
const notApplied = (list: PropertyListRecord) => Object.keys(list.filters ?? {}).filter((f) => !SCREEN_FILTERS.includes(f))

/** create_property_list: the list kept for the seat, and its auth_token, given this once. */
export function createPropertyList (call: ToolCall, args: Record<string, unknown>): Record<string, unknown> {
  const req = args as unknown as CreatePropertyListRequest
  checkAccount(call, req.account)
  const token = `plt_${randomBytes(24).toString('base64url')}`
  const stamp = iso(call.now)
  const brand = (req.brand ?? req.brand_manifest) as Record<string, unknown> | undefined
  const list: PropertyListRecord = {
    list_id: `pl_${randomUUID().replace(/-/g, '')}`,
    seat_id: call.seat.seat_id,
    name: req.name,
    ...(req.description !== undefined ? { description: req.description } : {}),
    ...normalized(req.base_properties, req.filters as PropertyListRecord['filters']),
    ...(brand !== undefined ? { brand } : {}),
    token_sha256: digestKey(token),
    created_at: stamp,
    updated_at: stamp
  }
  record(call, () => {
    call.store.propertyLists.putSync(list.list_id, list)
    indexForSeat(call.store, 'property_list', call.seat.seat_id, call.now, list.list_id)
  })
  return { list: listView(list), auth_token: token }
}

/** update_property_list: what the request names replaced, the rest kept. */
export function updatePropertyList (call: ToolCall, args: Record<string, unknown>): Record<string, unknown> {
  const req = args as unknown as UpdatePropertyListRequest
  checkAccount(call, req.account)
  return record(call, () => {
    const list = ownList(call, req.list_id, req.auth_token)
    const next: PropertyListRecord = { ...list, updated_at: iso(call.now) }
    if (req.name !== undefined) next.name = req.name
    if (req.description !== undefined) next.description = req.description
    if (req.brand !== undefined) next.brand = req.brand
    if (req.base_properties !== undefined || req.filters !== undefined) {
      const { base_properties: base, filters } = normalized(req.base_properties, (req.filters ?? list.filters) as PropertyListRecord['filters'])
      if (req.base_properties !== undefined) {
        if (base !== undefined) next.base_properties = base
        else delete next.base_properties
      }
      if (filters !== undefined) next.filters = filters
    }
    call.store.propertyLists.putSync(list.list_id, next)
    return { list: listView(next) }
  })
}

/** The seat's own list; another seat's, even with its token, is read-only. */
function ownList (call: ToolCall, listId: string, token: string | undefined): PropertyListRecord {
  const list = namedList(call, listId, token, 'list_id')
  if (list.seat_id.toLowerCase() !== call.seat.seat_id.toLowerCase()) throw new ApiError('not_authorized', `Property list ${listId} is seat ${list.seat_id}'s: its auth_token lets this seat read and use it, not change it.`, { param: 'list_id' })
  return list
}

/** delete_property_list: the list is gone; packages bought on it keep their screens. */
export function deletePropertyList (call: ToolCall, args: Record<string, unknown>): Record<string, unknown> {
  const req = args as unknown as DeletePropertyListRequest
  checkAccount(call, req.account)
  return record(call, () => {
    const list = ownList(call, req.list_id, req.auth_token)
    call.store.propertyLists.removeSync(list.list_id)
    unindexForSeat(call.store, 'property_list', list.seat_id, Date.parse(list.created_at), list.list_id)
    return { deleted: true, list_id: list.list_id }
  })
}

/** A page cursor: the last id of the page before, as this agent gave it. */
const cursorOf = (id: string) => Buffer.from(id).toString('base64url')
const afterOf = (cursor: string | undefined) => cursor !== undefined ? Buffer.from(cursor, 'base64url').toString() : undefined

/**
 * get_property_list: the list, and (resolve, the default) the screens it keeps now as screen_id identifiers, in
 * screen_id order and paged; identifiers of its sources that name no screen on sale are coverage_gaps.
 */
export function getPropertyList (call: ToolCall, args: Record<string, unknown>): Record<string, unknown> {
  const req = args as unknown as GetPropertyListRequest
  checkAccount(call, req.account)
  const list = namedList(call, req.list_id, req.auth_token, 'list_id')
  const extra = notApplied(list)
  const ext = { oohbid: { ...(extra.length > 0 ? { filters_not_applied: extra, reason: 'These filters describe web content, not screens: they are kept as given and select nothing here.' } : {}) } }
  if (req.resolve === false) return { list: listView(list), ext }
  const keeps = screenTest(call, list)
  const seen = new Seen()
  const kept: string[] = []
  for (const s of screensOnSale(call)) {
    seen.add(factsOf(call, s))
    if (keeps(s)) kept.push(s.screen_id)
  }
  const after = afterOf(req.pagination?.cursor)
  const start = after !== undefined ? kept.findIndex((id) => id > after) : 0
  const from = start < 0 ? kept.length : start
  const page = kept.slice(from, from + (req.pagination?.max_results ?? req.max_results ?? PAGE))
  const more = from + page.length < kept.length
  const gaps = coverageGaps(list.base_properties, (id) => seen.names(id))
  return {
    list: listView(list, kept.length),
    identifiers: page.map((id) => ({ type: 'screen_id', value: id })),
    pagination: { has_more: more, total_count: kept.length, ...(more ? { cursor: cursorOf(page.at(-1)!) } : {}) },
    resolved_at: iso(call.now),
    ...(Object.keys(gaps).length > 0 ? { coverage_gaps: gaps } : {}),
    ext
  }
}

/** list_property_lists: the seat's lists, newest first, by name_contains, paged. */
export function listPropertyLists (call: ToolCall, args: Record<string, unknown>): Record<string, unknown> {
  const req = args as unknown as ListPropertyListsRequest
  checkAccount(call, req.account)
  const part = req.name_contains?.toLowerCase()
  const lists = seatItems(call.store, 'property_list', call.seat.seat_id, (id) => call.store.propertyLists.get(id)).filter((l) => part === undefined || l.name.toLowerCase().includes(part))
  const after = afterOf(req.pagination?.cursor)
  const start = after !== undefined ? lists.findIndex((l) => l.list_id === after) + 1 : 0
  const page = lists.slice(start, start + (req.pagination?.max_results ?? req.max_results ?? LISTS_PAGE))
  const more = start + page.length < lists.length
  return { lists: page.map((l) => listView(l)), pagination: { has_more: more, total_count: lists.length, ...(more ? { cursor: cursorOf(page.at(-1)!.list_id) } : {}) } }
}
