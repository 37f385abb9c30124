import t from 'tap'
import { hourShares } from './capacity.js'
import type { Daypart } from '../generated/types.js'
import type { ScreenRecord } from '../inventory/records.js'

// A guaranteed daypart line's spots of a day, hour by hour: what each hour must hold for the day to be delivered.

const screen = (over: Partial<ScreenRecord> = {}) => ({ slot_duration_seconds: 120, operating_hours: undefined, ...over }) as ScreenRecord
const evening: Daypart[] = [{ days: ['mon'], start_hour: 17, end_hour: 20 }]

t.test('spots spread over the hours in proportion to what each can play, summing to the day\'s spots', async (t) => {
  t.same(hourShares(screen(), '2026-11-30', evening, 30), [[17, 10, 30], [18, 10, 30], [19, 10, 30]], 'three equal hours of 30 spots each')
  t.same(hourShares(screen(), '2026-11-30', evening, 31), [[17, 11, 30], [18, 10, 30], [19, 10, 30]], 'the remainder to the first of equal hours')
  const closing = screen({ operating_hours: { mon: [['08:00', '18:30']] } })
  t.same(hourShares(closing, '2026-11-30', evening, 9), [[17, 6, 30], [18, 3, 15]], 'the screen closes at 18:30: that hour can play half as much, and takes half as much')
  t.same(hourShares(screen(), '2026-12-01', evening, 30), [], 'a Tuesday has no Monday evening: nothing to book')
  for (const spots of [1, 7, 59, 90]) t.equal(hourShares(screen(), '2026-11-30', evening, spots).reduce((n, [, s]) => n + s, 0), spots, `${spots} spots are all placed`)
})
