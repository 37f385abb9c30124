import t from 'tap'
import { headroom } from './budget.js'
import type { CampaignLedger, CampaignRecord } from './records.js'

// Pacing on the exchange path (headroom): what a campaign may commit to one more play at a moment of the day. Pure:
// a campaign, its ledger and the clock in, micro-dollars out. No service, no store.

const DAY = 86_400_000
const HOUR = 3_600_000
const at = (date: string, hour: number) => Date.parse(`${date}T00:00:00Z`) + hour * HOUR
const campaign = (over: Partial<CampaignRecord> = {}) => ({ budget_usd: 100, pacing: 'even', start_date: '2026-11-20', end_date: '2026-11-29', ...over }) as CampaignRecord
const ledger = (over: Partial<CampaignLedger> = {}): CampaignLedger => ({ spent_micros: 0, reserved_micros: 0, day: '2026-11-20', day_spent_micros: 0, ...over })

t.test('even pacing spreads what is left over the days left, released along the UTC day an hour ahead', async (t) => {
  // 10 days, $100: $10 a day. At 00:00 an hour of it ($10 / 24) may be spent; from 23:00 all of it.
  t.equal(Math.round(headroom(campaign(), ledger(), at('2026-11-20', 0))), 416_667, 'at 00:00, the first hour\'s share ($10 / 24)')
  t.equal(headroom(campaign(), ledger(), at('2026-11-20', 11)), 10_000_000 / 2, 'at 11:00, half the day\'s allowance')
  t.equal(headroom(campaign(), ledger(), at('2026-11-20', 23)), 10_000_000)
  t.equal(headroom(campaign(), ledger(), at('2026-11-20', 23) + HOUR - 1), 10_000_000, 'never more than the day\'s allowance')
})

t.test('what was spent today and what bids in flight hold both count against the line', async (t) => {
  const noon = at('2026-11-20', 11)
  t.equal(headroom(campaign(), ledger({ spent_micros: 2_000_000, day_spent_micros: 2_000_000 }), noon), 3_000_000)
  t.equal(headroom(campaign(), ledger({ reserved_micros: 1_000_000 }), noon), 4_000_000)
  t.ok(headroom(campaign(), ledger({ spent_micros: 6_000_000, day_spent_micros: 6_000_000 }), noon) < 0, 'ahead of the line: no room until the line catches up')
})

t.test('spend before today is spread over the days left; an under-spent past is made up', async (t) => {
  // Day 6 of 10, $50 spent on earlier days: $50 over the 5 days left is $10 a day.
  const ledger6 = ledger({ day: '2026-11-25', spent_micros: 50_000_000 })
  t.equal(headroom(campaign(), ledger6, at('2026-11-25', 23)), 10_000_000)
  // Nothing spent by day 6: $100 over 5 days is $20 a day.
  t.equal(headroom(campaign(), ledger({ day: '2026-11-25' }), at('2026-11-25', 23)), 20_000_000)
  t.equal(headroom(campaign(), ledger({ day: '2026-11-29' }), at('2026-11-29', 23)), 100_000_000, 'the last day may spend all that is left')
})

t.test('asap has no daily line; daily_budget_usd caps either pacing', async (t) => {
  t.equal(headroom(campaign({ pacing: 'asap' }), ledger(), at('2026-11-20', 0)), 100_000_000)
  t.equal(headroom(campaign({ pacing: 'asap' }), ledger({ spent_micros: 99_000_000, day_spent_micros: 99_000_000, reserved_micros: 500_000 }), at('2026-11-20', 0)), 500_000)
  t.equal(headroom(campaign({ pacing: 'asap', daily_budget_usd: 3 }), ledger(), at('2026-11-20', 0)), 3_000_000)
  t.equal(headroom(campaign({ daily_budget_usd: 2.4 }), ledger(), at('2026-11-20', 11)), 1_200_000, 'even, capped at $2.40 a day: half of it by 11:00')
})

t.test('the budget left bounds everything', async (t) => {
  t.equal(headroom(campaign({ pacing: 'asap' }), ledger({ spent_micros: 100_000_000 }), at('2026-11-20', 5)), 0)
  t.equal(headroom(campaign({ budget_usd: 1 }), ledger({ day: '2026-11-29', spent_micros: 600_000 }), at('2026-11-29', 23)), 400_000)
  t.equal(headroom(campaign(), ledger(), at('2026-11-20', 0) + DAY - 1), 10_000_000)
})
