import { ApiError } from '../../errors.js'
import type { AdslotsQuery, LiveAudience, VenueType } from '../../generated/types.js'
import { keyPart, NO_VAS, SOURCE_ORDER, SOURCES, tupleMatches, vasOf, type Source, type TupleFilter } from '../adslot-index.js'
import { compareKeys, currentVersion, entriesAt, type EntryAt } from '../adslot-versions.js'
import type { FeinState, IndexKey, IndexTuple } from '../records.js'
import { liveSignals, type LiveSignals } from '../fein.js'
import { isCountry, stateCode } from '../geo.js'
import { audienceMatches } from '../live-audience.js'
import { VENUES } from '../venues.js'
import type { Store } from '../../store/store.js'

/** A validated adslots query, ready to scan the index. */
export interface Plan {
  /** Sources to list, in order (owned first). */
  sources: Source[]
  tuple: TupleFilter
  minVas?: number
  /** min_attention (a fraction 0-1: the query gives percent) and emotion, as audienceMatches takes them; set with either. */
  live?: LiveAudience
  /** Row-by-row refinements: with them, total_count is omitted. */
  refined: boolean
}

/** A walk: the version of the order it reads and, past its first page, where it continues. */
export interface Walk {
  /** The adslots version the walk's first page read (adslot-versions.ts): the order every page of it follows. */
  version: number
  after?: IndexKey
}

/** Where a later page of a walk starts: after the last key it listed, within one source. */
export interface Cursor extends Walk {
  source: Source
  after: IndexKey
}

/** A screen a page lists, with what its row shows read once, where the filters read it. */
export interface Listed {
  /** Its key in the walk's order: the next page continues after it. */
  at: IndexKey
  /** Its current key: the data quality and vas_7d its row shows and min_vas is checked on. */
  key: IndexKey
  /** Its current index value, when the page needs it. */
  tuple?: IndexTuple
  /** Its FEIN state (null: none), once read. */
  state?: FeinState | null
  /** The live signals its row shows, once computed. */
  live?: LiveSignals
}

/** Turns the query into a plan; 400 invalid_parameter with param for values the schema cannot judge. */
export function planFrom (q: AdslotsQuery, enabled: Source[]): Plan {
  const tuple: TupleFilter = {}
  if (q.venue_type !== undefined) {
    const v = q.venue_type.toLowerCase()
    if (!(v in VENUES)) throw new ApiError('invalid_parameter', `venue_type must be one of ${Object.keys(VENUES).join(', ')}.`, { param: 'venue_type' })
    tuple.venueType = v as VenueType
  }
  if (q.country !== undefined) {
    if (!isCountry(q.country)) throw new ApiError('invalid_parameter', 'country must be an ISO 3166-1 alpha-2 code.', { param: 'country' })
    tuple.country = q.country.toUpperCase()
  }
  if (q.state !== undefined) {
    if (tuple.country === undefined) throw new ApiError('invalid_parameter', 'state needs country.', { param: 'state' })
    tuple.state = stateCode(tuple.country, q.state) ?? q.state.toUpperCase()
  }
  if (q.city !== undefined) tuple.city = q.city.toLowerCase()
  if (q.since !== undefined) tuple.sinceMs = Date.parse(q.since)
  if (q.orientation !== undefined) tuple.orientation = q.orientation
  if (q.has_fein !== undefined) tuple.sensors = q.has_fein
  if (q.max_age_rating !== undefined) tuple.maxAgeRating = q.max_age_rating
  if (q.allow_alcohol !== undefined) tuple.allowAlcohol = q.allow_alcohol
  if (q.allow_gambling !== undefined) tuple.allowGambling = q.allow_gambling
  const wanted: Source[] = q.source === 'all' ? ['owned', 'partner'] : [q.source ?? 'owned']
  const plan: Plan = {
    sources: wanted.filter((s) => enabled.includes(s)),
    tuple,
    refined: q.orientation !== undefined || q.has_fein !== undefined || q.max_age_rating !== undefined || q.allow_alcohol !== undefined || q.allow_gambling !== undefined
  }
  if (q.min_vas !== undefined) plan.minVas = q.min_vas
  if (q.min_attention !== undefined || q.emotion !== undefined) plan.live = { ...(q.min_attention !== undefined ? { min_attention: q.min_attention / 100 } : {}), ...(q.emotion !== undefined ? { emotion: q.emotion } : {}) }
  return plan
}

/** Whether the plan filters on FEIN (such filters exclude screens without sensors). */
export function hasFeinFilter (plan: Plan): boolean {
  return plan.minVas !== undefined || plan.live !== undefined
}

/**
 * Opaque cursor: base64url of [version, issued ms, source, rank, -vas, screen_id]. A cluster node's cursor begins
 * with its node id and a dot: a walk's versions and past keys are the issuing node's own, so the load balancer
 * routes the cursor back to it (deploy/haproxy.cfg).
 */
export function encodeCursor (version: number, issuedAt: number, key: IndexKey, node?: string): string {
  const cursor = Buffer.from(JSON.stringify([version, issuedAt, ...key])).toString('base64url')
  return node !== undefined ? `${node}.${cursor}` : cursor
}

/**
 * Reads a cursor. Cursors are scoped to a source and expire ttlMs after the page that issued them. Cursors from before
 * walks were versioned, [source, rank, -vas, screen_id] or the two-part legacy form ([sort key, screen_id] or
 * "sortkey:screen_id", decoded as owned, resuming after that screen's current place), continue over today's order.
 */
export function decodeCursor (raw: string, plan: Plan, store: Store, now: number, ttlMs: number, node?: string): Cursor {
  const bad = (why: string) => new ApiError('invalid_parameter', `cursor ${why}; pass cursor.next of the previous page unchanged.`, { param: 'cursor' })
  const dot = raw.indexOf('.')
  const issuer = dot >= 0 ? raw.slice(0, dot) : node
  if (issuer !== node) {
    if (node === undefined) throw bad('is not valid')
    // Reached only when the issuing node is gone (the load balancer sends a cursor to its node while it is up).
    throw new ApiError('invalid_parameter', `cursor was issued by cluster node ${issuer}, which is not serving: start the walk again without cursor.`, { param: 'cursor' })
  }
  let parts: unknown
  const text = Buffer.from(dot >= 0 ? raw.slice(dot + 1) : raw, 'base64url').toString('utf8')
  try {
    parts = JSON.parse(text)
  } catch {
    parts = text.split(':')
  }
  if (!Array.isArray(parts)) throw bad('is not valid')
  if (parts.length === 2 && typeof parts[1] === 'string') {
    const pos = store.adslotPos.get(parts[1])
    if (pos === undefined || pos[0] !== SOURCE_ORDER.owned) throw bad('names a screen that is no longer listed')
    if (!plan.sources.includes('owned')) throw bad('is an owned-inventory cursor')
    return { source: 'owned', version: currentVersion(store), after: pos }
  }
  const versioned = parts.length === 6
  const [version, issuedAt] = versioned ? parts as unknown[] : [currentVersion(store), now]
  const [src, rank, negVas, id] = (versioned ? parts.slice(2) : parts) as unknown[]
  if (!(versioned || parts.length === 4) || !Number.isSafeInteger(version) || typeof issuedAt !== 'number' || typeof src !== 'number' || typeof rank !== 'number' || typeof negVas !== 'number' || typeof id !== 'string' || SOURCES[src] === undefined) throw bad('is not valid')
  if (now - issuedAt > ttlMs) {
    throw new ApiError('invalid_parameter', `cursor has expired: a walk keeps its listing for ${ttlMs / 1000} seconds after each page. Start the walk again without cursor.`, { param: 'cursor' })
  }
  const source = SOURCES[src]!
  if (!plan.sources.includes(source)) throw bad(`belongs to source ${source}`)
  return { source, version: version as number, after: [src, rank, keyPart(negVas), id] }
}

/** The key ranges a plan covers, in listing order: per source, per quality rank, bounded by min_vas. */
function segments (plan: Plan): Array<{ start: IndexKey | [number] | [number, number], end: unknown[] }> {
  const out: Array<{ start: IndexKey | [number] | [number, number], end: unknown[] }> = []
  for (const source of plan.sources) {
    const s = SOURCE_ORDER[source]
    if (!hasFeinFilter(plan)) { out.push({ start: [s], end: [s + 1] }); continue }
    // attention and emotion are live signals: only live screens (rank 0) can match; min_vas alone allows historical.
    const ranks = plan.live !== undefined ? [0] : [0, 1]
    for (const r of ranks) out.push({ start: [s, r], end: plan.minVas !== undefined ? [s, r, keyPart(-plan.minVas), '\uffff'] : [s, r, NO_VAS] })
  }
  return out
}

/** A listed screen's FEIN state, read once. */
export function stateOf (store: Store, l: Listed): FeinState | undefined {
  if (l.state === undefined) l.state = store.fein.get(l.key[3]) ?? null
  return l.state ?? undefined
}

/** The live signals a listed screen's row shows, computed once. */
export function liveOf (store: Store, l: Listed, now: number): LiveSignals {
  l.live ??= liveSignals(stateOf(store, l), now)
  return l.live
}

/**
 * Whether a listed screen passes the plan's FEIN filters, on the values its row shows: min_vas and data quality on
 * its current key, min_attention and emotion on the live signals as presented.
 */
function feinPasses (store: Store, l: Listed, plan: Plan, now: number): boolean {
  if (!hasFeinFilter(plan)) return true
  const vas = vasOf(l.key[2])
  if (plan.minVas !== undefined && (vas === null || vas < plan.minVas)) return false
  if (plan.live === undefined) return l.key[1] < 2
  if (l.key[1] !== 0) return false
  return audienceMatches(plan.live, liveOf(store, l, now))
}

/** The current entries of a key range, without their values when nothing needs them (a key-only scan is 3x cheaper). */
function * currentEntries (store: Store, range: object, needsTuple: boolean): Generator<EntryAt> {
  if (!needsTuple) {
    for (const key of store.adslotIndex.getKeys(range as never)) yield { at: key as unknown as IndexKey }
    return
  }
  for (const { key, value } of store.adslotIndex.getRange(range as never)) yield { at: key as IndexKey, tuple: value }
}

/**
 * Matching screens in the walk's order, after its cursor. The walk reads the order as it stood at its version (its
 * first page's), bounded by the plan's ranks and min_vas as they stood then; every filter is then checked on the
 * screen's values now, which its row shows. A screen gone since is passed over.
 */
export function * matches (store: Store, plan: Plan, now: number, walk: Walk, needTuple = false): Generator<Listed> {
  const needsTuple = needTuple || Object.keys(plan.tuple).length > 0
  const current = walk.version >= currentVersion(store)
  const after = walk.after
  for (const seg of segments(plan)) {
    let start: unknown[] = seg.start
    let exclusive = false
    if (after !== undefined) {
      if (compareKeys(after, seg.end as IndexKey) >= 0) continue
      if (compareKeys(after, seg.start as IndexKey) >= 0) { start = after; exclusive = true }
    }
    const range = { start, end: seg.end, exclusiveStart: exclusive }
    for (const e of current ? currentEntries(store, range, needsTuple) : entriesAt(store, walk.version, range)) {
      if (exclusive && compareKeys(e.at, after!) <= 0) continue
      let l: Listed
      if (e.tuple !== undefined || current) l = { at: e.at, key: e.at, ...(e.tuple !== undefined ? { tuple: e.tuple } : {}) }
      else {
        // A key the screen has since left: the row shows where it stands now, if it is still listed.
        const key = store.adslotPos.get(e.at[3])
        const tuple = key !== undefined ? store.adslotIndex.get(key) : undefined
        if (key === undefined || tuple === undefined) continue
        l = { at: e.at, key, tuple }
      }
      if (l.tuple !== undefined && !tupleMatches(l.tuple, plan.tuple)) continue
      if (!feinPasses(store, l, plan, now)) continue
      yield l
    }
  }
}

/** Up to limit screens of the walk after its cursor, and whether more follow. */
export function page (store: Store, plan: Plan, now: number, limit: number, walk: Walk, needTuple = false): { entries: Listed[], hasMore: boolean } {
  const entries: Listed[] = []
  for (const l of matches(store, plan, now, walk, needTuple)) {
    if (entries.length === limit) return { entries, hasMore: true }
    entries.push(l)
  }
  return { entries, hasMore: false }
}

/**
 * Counting a filtered listing means scanning it, so counts are kept for a few seconds per distinct filter: a buyer
 * paging through a million screens asks for the same count on every first page.
 */
export class CountCache {
  readonly #entries = new Map<string, { count: number, until: number }>()
  readonly #ttlMs: number

  constructor (ttlMs = 10_000) {
    this.#ttlMs = ttlMs
  }

  count (store: Store, plan: Plan, now: number): number {
    const id = JSON.stringify(plan)
    const hit = this.#entries.get(id)
    if (hit !== undefined && hit.until > now) return hit.count
    let count = 0
    for (const _ of matches(store, plan, now, { version: currentVersion(store) })) count++
    if (this.#entries.size > 1000) this.#entries.clear()
    this.#entries.set(id, { count, until: now + this.#ttlMs })
    return count
  }
}
