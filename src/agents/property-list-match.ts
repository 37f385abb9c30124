import type { PropertyIdentifier } from '../generated/types.js'
import type { FeatureRequirement, PropertySource, ScreenFilters } from './records.js'

/** What a property list can say of a screen: its ids, its place and kind, its publisher and its features. */
export interface ScreenFacts {
  screen_id: string
  device_id: string
  venue_type: string
  city: string
  country: string
  /** The publisher domain /sellers.json gives the screen's operator. */
  domain: string
  features: { fein: boolean, video: boolean, audio: boolean, touch: boolean, floor_cpm: number }
}

/** The features feature_requirements may name, as get_adcp_capabilities reports them (governance.property_features). */
export const SCREEN_FEATURES: Array<{ feature_id: keyof ScreenFacts['features'], type: 'binary' | 'quantitative', description: string }> = [
  { feature_id: 'fein', type: 'binary', description: 'The screen has FEIN audience sensors: it measures its live audience (faces, attention, emotion) and sells it as signals.' },
  { feature_id: 'video', type: 'binary', description: 'The screen plays video creatives.' },
  { feature_id: 'audio', type: 'binary', description: 'The screen plays sound.' },
  { feature_id: 'touch', type: 'binary', description: 'The screen is a touch screen.' },
  { feature_id: 'floor_cpm', type: 'quantitative', description: 'The screen\'s floor price, USD CPM.' }
]

/** The filters property-list-filters.json applies to screens: any other filter is kept, and reported as not applied. */
export const SCREEN_FILTERS = ['countries_all', 'channels_any', 'property_types', 'exclude_identifiers', 'feature_requirements']

/** The tags a screen carries for publisher_tags sources: its venue type, its city, and fein when it has audience sensors. */
export function tagsOf (s: ScreenFacts): string[] {
  return [s.venue_type, s.city.toLowerCase().replace(/\s+/g, '_'), ...(s.features.fein ? ['fein'] : [])]
}

/** Identifiers by type, for lookups: domains and venue types lower-cased. */
class IdentifierSet {
  readonly #by = new Map<string, Set<string>>()
  constructor (ids: readonly PropertyIdentifier[]) {
    for (const id of ids) {
      const value = id.type === 'screen_id' || id.type === 'venue_id' ? id.value : id.value.toLowerCase()
      let set = this.#by.get(id.type)
      if (set === undefined) this.#by.set(id.type, (set = new Set()))
      set.add(value)
    }
  }

  get empty (): boolean {
    return this.#by.size === 0
  }

  /** Whether any identifier names the screen. */
  names (s: ScreenFacts): boolean {
    const domain = s.domain.toLowerCase()
    if (this.#by.get('screen_id')?.has(s.screen_id) === true || this.#by.get('venue_id')?.has(s.device_id) === true) return true
    if (this.#by.get('openooh_venue_type')?.has(s.venue_type) === true || this.#by.get('domain')?.has(domain) === true) return true
    const sub = this.#by.get('subdomain')
    if (sub === undefined) return false
    for (let at = domain; at !== ''; at = at.includes('.') ? at.slice(at.indexOf('.') + 1) : '') if (sub.has(at)) return true
    return false
  }
}

/** What decides a source: its identifiers, or its publisher (lower-cased) with screen ids or tags. */
interface CompiledSource { ids?: IdentifierSet, domain?: string, screenIds?: Set<string>, tags?: Set<string> }

/** Whether a screen meets a feature requirement; one on a feature screens do not have is decided by if_not_covered. */
function meets (r: FeatureRequirement, s: ScreenFacts): boolean {
  if (!(r.feature_id in s.features)) return r.if_not_covered === 'include'
  const value = s.features[r.feature_id as keyof ScreenFacts['features']]
  if (r.allowed_values !== undefined && !r.allowed_values.includes(value)) return false
  if (typeof value === 'number' && ((r.min_value !== undefined && value < r.min_value) || (r.max_value !== undefined && value > r.max_value))) return false
  return true
}

/**
 * A property list as a test of screens: one of its base sources names the screen (no sources: every screen) and every
 * filter that applies to screens lets it through. Built once a call, so that each screen costs a few set lookups
 * however long the list.
 */
export function listTest (list: { base_properties?: PropertySource[], filters?: ScreenFilters }): (s: ScreenFacts) => boolean {
  const sources: CompiledSource[] | undefined = list.base_properties?.map((source) => source.selection_type === 'identifiers'
    ? { ids: new IdentifierSet(source.identifiers ?? []) }
    : { domain: (source.publisher_domain ?? '').toLowerCase(), ...(source.selection_type === 'publisher_ids' ? { screenIds: new Set(source.property_ids) } : { tags: new Set((source.tags ?? []).map((t) => t.toLowerCase())) }) })
  const f = list.filters ?? {}
  const excluded = new IdentifierSet(f.exclude_identifiers ?? [])
  const country = f.countries_all?.length === 1 ? f.countries_all[0]!.toUpperCase() : undefined
  const none = (f.countries_all !== undefined && country === undefined) || (f.channels_any !== undefined && !f.channels_any.some((c) => c === 'dooh' || c === 'ooh')) || (f.property_types !== undefined && !f.property_types.includes('dooh'))
  const requirements = f.feature_requirements ?? []
  return (s) => {
    if (none) return false
    if (sources !== undefined && !sources.some((c) => c.ids !== undefined
      ? c.ids.names(s)
      : c.domain === s.domain.toLowerCase() && (c.screenIds !== undefined ? c.screenIds.has(s.screen_id) : tagsOf(s).some((t) => c.tags!.has(t))))) return false
    if (country !== undefined && country !== s.country.toUpperCase()) return false
    if (!excluded.empty && excluded.names(s)) return false
    return requirements.every((r) => meets(r, s))
  }
}

/**
 * The identifiers of a list's sources that name no screen here, by type (get_property_list's coverage_gaps): `seen`
 * answers whether one names a screen.
 */
export function coverageGaps (sources: PropertySource[] | undefined, seen: (s: PropertyIdentifier) => boolean): Record<string, PropertyIdentifier[]> {
  const gaps: Record<string, PropertyIdentifier[]> = {}
  for (const source of sources ?? []) {
    for (const id of source.identifiers ?? []) if (!seen(id)) (gaps[id.type] ??= []).push(id)
  }
  return gaps
}

/** Which identifiers the screens on sale answer to, gathered in one pass, to tell coverage gaps afterwards. */
export class Seen {
  readonly #values: Record<'screen_id' | 'venue_id' | 'openooh_venue_type' | 'domain', Set<string>> = { screen_id: new Set(), venue_id: new Set(), openooh_venue_type: new Set(), domain: new Set() }

  add (s: ScreenFacts): void {
    this.#values.screen_id.add(s.screen_id)
    this.#values.venue_id.add(s.device_id)
    this.#values.openooh_venue_type.add(s.venue_type)
    this.#values.domain.add(s.domain.toLowerCase())
  }

  /** Whether the identifier names any screen added. */
  names (id: PropertyIdentifier): boolean {
    if (id.type === 'subdomain') return [...this.#values.domain].some((d) => d === id.value.toLowerCase() || d.endsWith(`.${id.value.toLowerCase()}`))
    const values = (this.#values as Record<string, Set<string> | undefined>)[id.type]
    return values?.has(id.type === 'screen_id' || id.type === 'venue_id' ? id.value : id.value.toLowerCase()) ?? false
  }
}
