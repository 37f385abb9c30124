import t from 'tap'
import { coverageGaps, listTest, Seen, tagsOf, type ScreenFacts } from './property-list-match.js'

// A property list decides which screens a buyer's products and packages may use: every source and filter, alone.

const screen = (over: Partial<ScreenFacts> & { screen_id: string }): ScreenFacts => ({
  device_id: `dev-${over.screen_id}`, venue_type: 'gym', city: 'Austin', country: 'US', domain: 'gyms.example',
  features: { fein: true, video: true, audio: false, touch: false, floor_cpm: 10 }, ...over
})
const a = screen({ screen_id: 'scr_a' })
const b = screen({ screen_id: 'scr_b', venue_type: 'airport', city: 'San Antonio', domain: 'air.ops.example', features: { fein: false, video: false, audio: true, touch: true, floor_cpm: 20 } })
const c = screen({ screen_id: 'scr_c', country: 'CA', city: 'Toronto' })
const all = [a, b, c]
const kept = (list: Parameters<typeof listTest>[0]) => all.filter(listTest(list)).map((s) => s.screen_id)

t.test('no sources: every screen; each source kind names its screens', async (t) => {
  t.same(kept({}), ['scr_a', 'scr_b', 'scr_c'])
  t.same(kept({ base_properties: [{ selection_type: 'identifiers', identifiers: [{ type: 'screen_id', value: 'scr_b' }, { type: 'venue_id', value: 'dev-scr_c' }] }] }), ['scr_b', 'scr_c'])
  t.same(kept({ base_properties: [{ selection_type: 'identifiers', identifiers: [{ type: 'openooh_venue_type', value: 'GYM' }] }] }), ['scr_a', 'scr_c'], 'venue types ignore case')
  t.same(kept({ base_properties: [{ selection_type: 'identifiers', identifiers: [{ type: 'domain', value: 'air.ops.example' }] }] }), ['scr_b'])
  t.same(kept({ base_properties: [{ selection_type: 'identifiers', identifiers: [{ type: 'subdomain', value: 'ops.example' }] }] }), ['scr_b'], 'a subdomain names the domains under it')
  t.same(kept({ base_properties: [{ selection_type: 'identifiers', identifiers: [{ type: 'ios_bundle', value: 'com.x' }] }] }), [], 'app identifiers name no screen')
  t.same(kept({ base_properties: [{ selection_type: 'publisher_ids', publisher_domain: 'GYMS.example', property_ids: ['scr_a', 'scr_b'] }] }), ['scr_a'], 'a publisher\'s own screens only')
  t.same(kept({ base_properties: [{ selection_type: 'publisher_tags', publisher_domain: 'air.ops.example', tags: ['san_antonio'] }] }), ['scr_b'])
  t.same(kept({ base_properties: [{ selection_type: 'publisher_tags', publisher_domain: 'gyms.example', tags: ['fein'] }] }), ['scr_a', 'scr_c'])
  t.same(tagsOf(b), ['airport', 'san_antonio'])
})

t.test('filters narrow the sources', async (t) => {
  t.same(kept({ filters: { countries_all: ['us'] } }), ['scr_a', 'scr_b'])
  t.same(kept({ filters: { countries_all: ['US', 'CA'] } }), [], 'a screen is in one country: none is in all of two')
  t.same(kept({ filters: { channels_any: ['display', 'ooh'] } }), ['scr_a', 'scr_b', 'scr_c'])
  t.same(kept({ filters: { channels_any: ['display'] } }), [])
  t.same(kept({ filters: { property_types: ['website'] } }), [])
  t.same(kept({ filters: { exclude_identifiers: [{ type: 'screen_id', value: 'scr_a' }] } }), ['scr_b', 'scr_c'])
  t.same(kept({ filters: { feature_requirements: [{ feature_id: 'fein', allowed_values: [true] }] } }), ['scr_a', 'scr_c'])
  t.same(kept({ filters: { feature_requirements: [{ feature_id: 'floor_cpm', min_value: 15, max_value: 25 }] } }), ['scr_b'])
  t.same(kept({ filters: { feature_requirements: [{ feature_id: 'viewability' }] } }), [], 'a feature screens do not have excludes by default')
  t.same(kept({ filters: { feature_requirements: [{ feature_id: 'viewability', if_not_covered: 'include' }] } }), ['scr_a', 'scr_b', 'scr_c'])
})

t.test('coverage gaps: the identifiers no screen answers to, by type', async (t) => {
  const seen = new Seen()
  for (const s of all) seen.add(s)
  const gaps = coverageGaps([{ selection_type: 'identifiers', identifiers: [{ type: 'screen_id', value: 'scr_a' }, { type: 'screen_id', value: 'scr_z' }, { type: 'subdomain', value: 'example' }, { type: 'domain', value: 'example.com' }] }], (id) => seen.names(id))
  t.same(gaps, { screen_id: [{ type: 'screen_id', value: 'scr_z' }], domain: [{ type: 'domain', value: 'example.com' }] })
})
