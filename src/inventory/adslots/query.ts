import { ApiError } from '../../errors.js'
import type { AdslotsQuery, VenueType } from '../../generated/types.js'
import { NO_VAS, SOURCE_ORDER, SOURCES, tupleMatches, type Source, type TupleFilter } from '../adslot-index.js'
import type { IndexKey, IndexTuple } from '../records.js'
import { FRESHNESS } from '../fein.js'
import { isCountry, stateCode } from '../geo.js'
import { VENUES } from '../venues.js'
import type { Store } from '../../store/store.js'

/** A validated adslots query, ready to scan the index. */
export interface Plan {
  /** Sources to list, in order (owned first). */
  sources: Source[]
  tuple: TupleFilter
  minVas?: number
  /** Fraction 0-1 (the query gives percent). */
  minAttention?: number
  emotion?: string
  /** Row-by-row refinements: with them, total_count is omitted. */
  refined: boolean
}

/** Where a page starts: after this key. */
export interface Cursor {
  source: Source
  after: IndexKey
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
  if (q.min_attention !== undefined) plan.minAttention = q.min_attention / 100
  if (q.emotion !== undefined) plan.emotion = q.emotion
  return plan
}

/** Whether the plan filters on FEIN (such filters exclude screens without sensors). */
export function hasFeinFilter (plan: Plan): boolean {
  return plan.minVas !== undefined || plan.minAttention !== undefined || plan.emotion !== undefined
}

/** Opaque cursor of a page's last key: base64url of [source, rank, -vas, screen_id]. */
export function encodeCursor (key: IndexKey): string {
  return Buffer.from(JSON.stringify(key)).toString('base64url')
}

/**
 * Reads a cursor. Cursors are scoped to a source; a two-part legacy cursor ([sort key, screen_id] or
 * "sortkey:screen_id") decodes as owned and resumes after that screen's current place.
 */
export function decodeCursor (raw: string, plan: Plan, store: Store): Cursor {
  const bad = (why: string) => new ApiError('invalid_parameter', `cursor ${why}; pass cursor.next of the previous page unchanged.`, { param: 'cursor' })
  let parts: unknown
  const text = Buffer.from(raw, 'base64url').toString('utf8')
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
    return { source: 'owned', after: pos }
  }
  const [src, rank, negVas, id] = parts as unknown[]
  if (parts.length !== 4 || typeof src !== 'number' || typeof rank !== 'number' || typeof negVas !== 'number' || typeof id !== 'string' || SOURCES[src] === undefined) throw bad('is not valid')
  const source = SOURCES[src]!
  if (!plan.sources.includes(source)) throw bad(`belongs to source ${source}`)
  return { source, after: [src, rank, negVas, id] }
}

function compare (a: IndexKey, b: IndexKey): number {
  for (let i = 0; i < 4; i++) {
    if (a[i]! < b[i]!) return -1
    if (a[i]! > b[i]!) return 1
  }
  return 0
}

/** The key ranges a plan covers, in listing order: per source, per quality rank, bounded by min_vas. */
function segments (plan: Plan): Array<{ start: IndexKey | [number] | [number, number], end: unknown[] }> {
  const out: Array<{ start: IndexKey | [number] | [number, number], end: unknown[] }> = []
  for (const source of plan.sources) {
    const s = SOURCE_ORDER[source]
    if (!hasFeinFilter(plan)) { out.push({ start: [s], end: [s + 1] }); continue }
    // attention and emotion are live signals: only live screens (rank 0) can match; min_vas alone allows historical.
    const ranks = plan.minAttention !== undefined || plan.emotion !== undefined ? [0] : [0, 1]
    for (const r of ranks) out.push({ start: [s, r], end: plan.minVas !== undefined ? [s, r, -plan.minVas, '\uffff'] : [s, r, NO_VAS] })
  }
  return out
}

/** Whether a screen's stored FEIN state passes the plan's live-signal filters. */
function feinPasses (store: Store, id: string, plan: Plan, now: number): boolean {
  if (plan.minAttention === undefined && plan.emotion === undefined) return true
  const state = store.fein.get(id)
  if (state === undefined) return false
  if (plan.minAttention !== undefined) {
    const at = state.at.attention_score
    if (at === undefined || now - at > FRESHNESS.attention_score || Number(state.values.attention_score) < plan.minAttention) return false
  }
  if (plan.emotion !== undefined) {
    const at = state.at.dominant_emotion
    if (at === undefined || now - at > FRESHNESS.dominant_emotion || state.values.dominant_emotion !== plan.emotion) return false
  }
  return true
}

/** Matching index entries in listing order, after the cursor. */
export function * matches (store: Store, plan: Plan, now: number, cursor?: Cursor, needTuple = false): Generator<{ key: IndexKey, tuple: IndexTuple | undefined }> {
  const needsTuple = needTuple || Object.keys(plan.tuple).length > 0
  for (const seg of segments(plan)) {
    let start: unknown[] = seg.start
    let exclusive = false
    if (cursor !== undefined) {
      const segEnd = seg.end as IndexKey
      if (compare(cursor.after, segEnd) >= 0) continue
      if (compare(cursor.after, seg.start as IndexKey) >= 0) { start = cursor.after; exclusive = true }
    }
    const range = { start: start as IndexKey, end: seg.end as IndexKey, exclusiveStart: exclusive } as never
    if (!needsTuple) {
      // Without tuple filters the values need not be decoded: a key-only scan is three times cheaper.
      for (const key of store.adslotIndex.getKeys(range)) {
        const k = key as unknown as IndexKey
        if (exclusive && compare(k, cursor!.after) <= 0) continue
        if (!feinPasses(store, k[3], plan, now)) continue
        yield { key: k, tuple: undefined }
      }
      continue
    }
    for (const { key, value } of store.adslotIndex.getRange(range)) {
      const k = key as IndexKey
      if (exclusive && compare(k, cursor!.after) <= 0) continue
      if (!tupleMatches(value, plan.tuple)) continue
      if (!feinPasses(store, k[3], plan, now)) continue
      yield { key: k, tuple: value }
    }
  }
}

/** Up to limit entries after the cursor, and whether more follow. */
export function page (store: Store, plan: Plan, now: number, limit: number, cursor?: Cursor, needTuple = false): { entries: Array<{ key: IndexKey, tuple: IndexTuple | undefined }>, hasMore: boolean } {
  const entries: Array<{ key: IndexKey, tuple: IndexTuple | undefined }> = []
  for (const e of matches(store, plan, now, cursor, needTuple)) {
    if (entries.length === limit) return { entries, hasMore: true }
    entries.push(e)
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
    for (const _ of matches(store, plan, now)) count++
    if (this.#entries.size > 1000) this.#entries.clear()
    this.#entries.set(id, { count, until: now + this.#ttlMs })
    return count
  }
}
