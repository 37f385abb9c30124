import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { targets, type Placement } from './match.js'
import { openStore } from '../store/store.js'
import type { Targeting } from '../generated/types.js'

// Targeting on the exchange path for impressions on screens that are not ours: what the bid request says (geo,
// venue, the screen's time zone) answers the location keys and dayparts, and a condition the request cannot answer
// never matches. No service is started; the store is a real, empty LMDB environment (these placements never read it).

const store = openStore(mkdtempSync(join(tmpdir(), 'oohbid-match-')))
t.teardown(() => store.close())
const AUSTIN_GYM: Placement = { country: 'US', region: 'TX', city: 'Austin', venueTypes: ['gym'], timezone: 'America/Chicago' }
// 15:00 UTC is 09:00 in Austin (morning); 03:00 UTC is 21:00 the evening before.
const MORNING = Date.parse('2026-11-24T15:00:00Z')
const EVENING = Date.parse('2026-11-24T03:00:00Z')
const holds = (t: Targeting, p = AUSTIN_GYM, now = MORNING) => targets(t, p, store, now)

t.test('location keys against the request\'s geo and venue', async (t) => {
  t.ok(holds({}), 'no targeting: any placement')
  t.ok(holds({ country: 'US', venue_type: 'gym', state: 'tx', city: 'aus' }), 'country, venue, state (any case), city (a part of the name)')
  t.ok(holds({ countries: ['CA', 'US'], venue_types: ['bar', 'gym'] }), 'any of the lists')
  t.notOk(holds({ country: 'CA' }))
  t.notOk(holds({ venue_type: 'bar' }))
  t.notOk(holds({ state: 'CA' }))
  t.notOk(holds({ city: 'Dallas' }))
  t.notOk(holds({ country: 'US' }, { venueTypes: [] }), 'a request without geo does not answer a country')
  t.notOk(holds({ city: 'Austin' }, { country: 'US', venueTypes: ['gym'] }), 'nor a city')
})

t.test('conditions only our own screens can answer never match elsewhere', async (t) => {
  for (const key of [{ screen_ids: ['scr_1'] }, { min_vas: 10 }, { min_attention: 50 }, { emotion: 'happy' }] as Targeting[]) {
    t.notOk(holds(key), JSON.stringify(key))
  }
  t.ok(holds({ screen_ids: [] }), 'an empty screen list asks for nothing')
})

t.test('dayparts on the screen\'s own clock, and only where the time zone is known', async (t) => {
  t.ok(holds({ dayparts: ['morning'] }, AUSTIN_GYM, MORNING))
  t.notOk(holds({ dayparts: ['morning'] }, AUSTIN_GYM, EVENING))
  t.ok(holds({ dayparts: ['evening', 'late_night'] }, AUSTIN_GYM, EVENING), '21:00 is evening')
  t.ok(holds({ dayparts: ['late_night'] }, AUSTIN_GYM, Date.parse('2026-11-24T10:00:00Z')), '04:00 is late night')
  t.notOk(holds({ dayparts: ['afternoon'] }, AUSTIN_GYM, MORNING))
  const { timezone: _, ...somewhere } = AUSTIN_GYM
  t.notOk(holds({ dayparts: ['morning'] }, somewhere), 'no time zone: a daypart cannot be told')
  t.ok(holds({ dayparts: [] }, somewhere))
})
