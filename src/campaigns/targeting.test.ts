import t from 'tap'
import { matchesEntry, normalizeTargeting } from './targeting.js'
import { ApiError } from '../errors.js'
import type { IndexKey, IndexTuple } from '../inventory/records.js'

// Campaign and deal targeting against our own screens, as the adslots index stores them: pure, no service, no store.

// A gym in Austin, TX: floor 5 USD CPM, VAS over the last 7 days 40 (stored negated so that the index sorts by it).
const key: IndexKey = [0, 0, -40, 'scr_gym']
const tuple: IndexTuple = ['gym', 'US', 'TX', 'austin', 0, 1, 0, 2, 0, 0, 5, 1]

t.test('the static keys: country, venue, screen ids, state, city, price, VAS', async (t) => {
  t.ok(matchesEntry({}, key, tuple), 'no targeting matches every screen')
  t.ok(matchesEntry({ country: 'US', venue_type: 'gym', state: 'TX', city: 'Aus' }, key, tuple), 'city matches a part of the name, any case')
  t.ok(matchesEntry({ countries: ['CA', 'US'], venue_types: ['bar', 'gym'] }, key, tuple))
  t.notOk(matchesEntry({ country: 'CA' }, key, tuple))
  t.notOk(matchesEntry({ venue_types: ['airport'] }, key, tuple))
  t.notOk(matchesEntry({ state: 'CA' }, key, tuple))
  t.notOk(matchesEntry({ city: 'Dallas' }, key, tuple))
  t.ok(matchesEntry({ screen_ids: ['scr_gym', 'scr_bar'] }, key, tuple))
  t.notOk(matchesEntry({ screen_ids: ['scr_bar'] }, key, tuple))
  t.ok(matchesEntry({ min_vas: 40 }, key, tuple), 'VAS at the minimum')
  t.notOk(matchesEntry({ min_vas: 41 }, key, tuple))
  t.notOk(matchesEntry({ min_vas: 1 }, [0, 0, 0, 'scr_new'], tuple), 'a screen with no VAS yet does not meet any minimum')
  t.ok(matchesEntry({}, key, tuple, 5), 'a price at the floor reaches the screen')
  t.notOk(matchesEntry({}, key, tuple, 4.99), 'below it does not')
})

t.test('normalizing: countries upper-cased and real, a state needs exactly one country and becomes its code', async (t) => {
  t.same(normalizeTargeting({ country: 'us', state: 'Texas' }), { country: 'US', state: 'TX' })
  t.same(normalizeTargeting({ countries: ['us', 'ca'] }), { countries: ['US', 'CA'] })
  t.same(normalizeTargeting(undefined), {})
  t.throws(() => normalizeTargeting({ country: 'XX' }), ApiError)
  t.throws(() => normalizeTargeting({ state: 'TX' }), /exactly one country/)
  t.throws(() => normalizeTargeting({ countries: ['US', 'CA'], state: 'TX' }), /exactly one country/)
})
