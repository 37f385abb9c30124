import { qualityOf, SOURCE_ORDER, tupleMatches, vasOf, type TupleFilter } from './adslot-index.js'
import type { IndexKey, IndexTuple, ScreenRecord } from './records.js'
import { present } from './fein.js'
import { interpret, type Interpretation } from './nl-query.js'
import type { Store } from '../store/store.js'

/** Beyond this many index entries a query stops scanning: entries come best first, so the top matches are found. */
const SCAN_LIMIT = 200_000
const INCOME_RANK: Record<string, number> = { low: 0, medium: 1, high: 2, premium: 3 }

function tupleFilter (it: Interpretation): TupleFilter {
  const f: TupleFilter = {}
  if (it.country !== null) f.country = it.country
  if (it.state !== null) f.state = it.state
  if (it.city !== null) f.city = it.city.toLowerCase()
  if (it.max_floor_cpm !== null) f.maxFloor = it.max_floor_cpm
  if (it.min_floor_cpm !== null) f.minFloor = it.min_floor_cpm
  if (it.orientation !== null) f.orientation = it.orientation
  if (it.online_only) f.online = true
  return f
}

/** Scores a candidate and says why it matched, or undefined when a FEIN condition fails. */
function judge (store: Store, it: Interpretation, key: IndexKey, tuple: IndexTuple, now: number): { score: number, reasons: string[] } | undefined {
  const quality = qualityOf(key[1])
  const vas = vasOf(key[2])
  const wantsLive = it.live_only || it.emotion !== null || it.min_attention !== null || it.min_crowd !== null || it.income_level !== null
  if (wantsLive && quality !== 'live') return undefined
  if (it.min_vas !== null && (vas === null || vas < it.min_vas)) return undefined
  const reasons: string[] = []
  let score = { live: 30, historical: 15, none: 0 }[quality]
  if (quality !== 'none') reasons.push(`${quality} audience data`)
  if (wantsLive || quality === 'live') {
    const fein = present(store.fein.get(key[3]), tuple[5] === 1, now)
    if (it.emotion !== null && fein.dominant_emotion !== it.emotion) return undefined
    if (it.min_attention !== null && (fein.attention_score === null || fein.attention_score * 100 < it.min_attention)) return undefined
    const crowd = fein.crowd_density ?? fein.live_face_count
    if (it.min_crowd !== null && (crowd === null || crowd < it.min_crowd)) return undefined
    if (it.income_level !== null && (fein.income_level === null || INCOME_RANK[fein.income_level]! < INCOME_RANK[it.income_level]!)) return undefined
    if (fein.attention_score !== null) { score += fein.attention_score * 30; reasons.push(`attention ${Math.round(fein.attention_score * 100)}%`) }
    if (crowd !== null) { score += Math.min(20, crowd / 5); reasons.push(`${crowd} people now`) }
    if (it.emotion !== null) reasons.push(`${it.emotion} crowd`)
    if (it.income_level !== null) reasons.push(`${fein.income_level} income`)
  }
  if (vas !== null) { score += Math.min(20, vas); reasons.push(`VAS ${vas}s`) }
  if (it.max_floor_cpm !== null) {
    score += Math.max(0, (it.max_floor_cpm - tuple[10]) / it.max_floor_cpm) * 10
    reasons.push(`floor $${tuple[10]} within $${it.max_floor_cpm}`)
  }
  if (it.venue_types.length > 0) reasons.push(`${tuple[0]} venue`)
  if (it.city !== null) reasons.push(`in ${it.city}`)
  return { score: Math.round(score * 10) / 10, reasons }
}

export function adslotsQuery (it: Interpretation): string {
  const q = new URLSearchParams()
  if (it.venue_types.length === 1) q.set('venue_type', it.venue_types[0]!)
  if (it.country !== null) q.set('country', it.country)
  if (it.state !== null) q.set('state', it.state)
  if (it.city !== null) q.set('city', it.city)
  if (it.min_attention !== null) q.set('min_attention', String(it.min_attention))
  if (it.emotion !== null) q.set('emotion', it.emotion)
  if (it.min_vas !== null) q.set('min_vas', String(it.min_vas))
  if (it.orientation !== null) q.set('orientation', it.orientation)
  return q.toString()
}

/** A screen a query matched: its index entry, its score and why it matched. */
export interface Match { key: IndexKey, score: number, reasons: string[] }

/**
 * Reads a natural-language query (nl-query.ts) and finds the screens it describes among the given sources, best first:
 * ranked by audience quality, attention, crowd, VAS and price headroom. POST /discover and the AI buying agents'
 * get_products both read briefs here.
 */
export function discover (store: Store, sources: Array<ScreenRecord['source']>, query: string, now: number): { interpretation: Interpretation, unrecognized: string[], matches: Match[] } {
  const { interpretation, unrecognized } = interpret(query)
  const filter = tupleFilter(interpretation)
  const scored: Match[] = []
  let scanned = 0
  for (const source of sources) {
    const s = SOURCE_ORDER[source]
    for (const { key, value } of store.adslotIndex.getRange({ start: [s], end: [s + 1] } as never)) {
      if (++scanned > SCAN_LIMIT) break
      if (interpretation.venue_types.length > 0 && !interpretation.venue_types.includes(value[0] as never)) continue
      if (!tupleMatches(value, filter)) continue
      const verdict = judge(store, interpretation, key as unknown as IndexKey, value, now)
      if (verdict !== undefined) scored.push({ key: key as unknown as IndexKey, ...verdict })
    }
  }
  scored.sort((a, b) => b.score - a.score || (a.key[3] < b.key[3] ? -1 : 1))
  return { interpretation, unrecognized, matches: scored }
}
