import t from 'tap'
import { dealRuns } from './deal-rules.js'
import { screenDate } from '../inventory/local-time.js'
import type { IndexKey, IndexTuple, ScreenRecord } from '../inventory/records.js'
import type { DealRecord } from './records.js'

// When a deal runs (src/campaigns/deal-rules.ts). No service is started.

const screen = { screen_id: 'scr_1', timezone: 'America/Chicago' } as unknown as ScreenRecord

t.test('a deal runs on the screen\'s own calendar day, within its targeting', async (t) => {
  const key = [0, 0, 0, 'scr_1'] as unknown as IndexKey
  const tuple = ['gym', 'US', 'TX', 'austin', 0, 1, 0, 0, 0, 0, 5] as unknown as IndexTuple
  const deal = { deal_id: 'd', type: 'PMP', status: 'active', floor_cpm: 6, start_date: '2026-11-23', end_date: '2026-11-23', targeting: { venue_type: 'gym' } } as unknown as DealRecord
  // 02:00 UTC on Nov 24 is 20:00 on Nov 23 in Austin: the deal that ends on the 23rd still runs there.
  const lateEvening = Date.parse('2026-11-24T02:00:00Z')
  const austin = screenDate(screen, lateEvening)
  t.equal(austin, '2026-11-23', 'the screen\'s own calendar day')
  t.ok(dealRuns(deal, austin, { key, tuple }), 'the last local day of the deal, though UTC has moved on')
  t.notOk(dealRuns(deal, screenDate({ ...screen, timezone: 'Europe/Berlin' }, lateEvening), { key, tuple }), 'a Berlin screen is on the 24th: over')
  t.notOk(dealRuns({ ...deal, start_date: '2026-11-24', end_date: '2026-11-30' }, austin, { key, tuple }), 'and one starting on the 24th has not started in Austin')
  t.notOk(dealRuns({ ...deal, targeting: { venue_type: 'bar' } }, austin, { key, tuple }), 'outside its targeting')
  t.notOk(dealRuns({ ...deal, status: 'paused' }, austin, { key, tuple }), 'paused')
  t.notOk(dealRuns(deal, austin, undefined), 'a screen no longer listed')
})
