import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { decide, INCREMENT } from './waterfall.js'
import { gather, type Gathered } from './gather.js'
import { LOSS } from '../loss-codes.js'
import { openStore, type Store } from '../../store/store.js'
import type { IndexKey, IndexTuple, ScreenRecord } from '../../inventory/records.js'
import type { SeatRecord } from '../../accounts/records.js'
import { bookKeyOf } from '../book.js'
import type { StoredBid } from '../records.js'
import type { AssignmentRecord, CampaignRecord, DealRecord } from '../../campaigns/records.js'
import type { CreativeRecord } from '../../creatives/records.js'
import { putSetting } from '../../store/settings.js'
import { applyUpdate, emptyFein } from '../../inventory/fein.js'
import type { AudienceUpdate } from '../../generated/types.js'

// The waterfall decision for a screen's next spot, on a real LMDB store holding just the records the decision reads
// (no service, no HTTP): which tier plays, the clearing price, and the loss code every other stored bid comes to.

/** The decision on what the store holds now: gather's reads, then decide. */
const decideOn = (store: Store, s: ScreenRecord, now: number) => decide(gather(store, s, now))

// Tuesday 2026-11-24 15:00 UTC: 09:00 in Chicago.
const NOW = Date.parse('2026-11-24T15:00:00Z')
const screen: ScreenRecord = {
  screen_id: 'scr_1', timezone: 'America/Chicago', floor_price_cpm: 2, auction_enabled: true, capabilities: { fein: false }, blocked_categories: [], blocked_advertisers: ['rival.example'], max_age_rating: 'PG-13'
} as unknown as ScreenRecord
const creative = (id: string, over: Partial<CreativeRecord> = {}) => ({ creative_id: id, seat_id: 'x', status: 'approved', moderation: { age_rating: 'G', iab_categories: [] }, ...over }) as unknown as CreativeRecord

function world (t: Test): { store: Store, bid: (id: string, seat: string, price: number, over?: Partial<StoredBid>) => void } {
  const store = openStore(mkdtempSync(join(tmpdir(), 'oohbid-waterfall-')))
  t.teardown(() => store.close())
  store.write(() => {
    store.screens.putSync(screen.screen_id, screen)
    // The screen's adslots index entry: what deal targeting is matched against (a gym in Chicago).
    const key: IndexKey = [0, 0, 0, screen.screen_id]
    const tuple: IndexTuple = ['gym', 'US', 'IL', 'chicago', NOW, 0, 0, 2, 0, 0, 2, 1]
    store.adslotPos.putSync(screen.screen_id, key)
    store.adslotIndex.putSync(key, tuple)
    for (const seat of ['alpha', 'bravo', 'charlie']) store.seats.putSync(seat, { seat_id: seat, status: 'approved' } as unknown as SeatRecord)
    store.seats.putSync('suspended', { seat_id: 'suspended', status: 'suspended' } as unknown as SeatRecord)
    for (const id of ['cr_a', 'cr_b', 'cr_c', 'cr_house']) store.creatives.putSync(id, creative(id))
    store.creatives.putSync('cr_pending', creative('cr_pending', { status: 'pending_moderation' }))
  })
  let n = 0
  const bid = (id: string, seat: string, price: number, over: Partial<StoredBid> = {}) => {
    const stored = { bid_id: id, response_id: 'r', seat_id: seat, impid: `imp_${id}`, screen_id: screen.screen_id, price, floor: 2, multiplier: 1, creative_id: `cr_${seat[0]}`, adomain: [], received_at: NOW - 1000 + n++, expires_at: NOW + 60_000, ...over } as StoredBid
    store.write(() => store.bids.putSync(bookKeyOf(stored), stored))
  }
  return { store, bid }
}
const lossOf = (d: ReturnType<typeof decide>, bidId: string) => d.losses.find((l) => l.candidate.bid.bid_id === bidId)

t.test('the open auction: second price plus the increment, one bid per seat setting prices', async (t) => {
  const { store, bid } = world(t)
  bid('b1', 'alpha', 7)
  bid('b2', 'bravo', 5)
  bid('b3', 'alpha', 6.5)
  const d = decideOn(store, screen, NOW)
  t.equal(d.tier, 'open_auction')
  t.equal(d.winner?.bid.bid_id, 'b1')
  t.equal(d.winner?.clearing, 5 + INCREMENT, 'the runner-up from another seat sets the price, not alpha\'s own 6.50')
  t.same([lossOf(d, 'b2')?.code, lossOf(d, 'b2')?.minToWin], [LOSS.outbid, 7.01], 'the loser learns what would have won')
  t.equal(lossOf(d, 'b3')?.code, LOSS.outbid)
})

t.test('a lone bid pays the floor plus the increment, never more than it bid', async (t) => {
  const { store, bid } = world(t)
  bid('b1', 'alpha', 9)
  t.equal(decideOn(store, screen, NOW).winner?.clearing, 2 + INCREMENT)
  const { store: store2, bid: bid2 } = world(t)
  bid2('b1', 'alpha', 2)
  t.equal(decideOn(store2, screen, NOW).winner?.clearing, 2, 'a bid at the floor pays the floor')
})

t.test('bids that cannot compete get their loss code and leave the auction to the rest', async (t) => {
  const { store, bid } = world(t)
  bid('expired', 'alpha', 9, { expires_at: NOW - 1 })
  bid('blocked_seat', 'suspended', 9, { creative_id: 'cr_a' })
  bid('pending', 'charlie', 9, { creative_id: 'cr_pending' })
  bid('rival', 'charlie', 9, { adomain: ['shop.rival.example'] })
  bid('low', 'alpha', 1.5, { floor: 1 })
  bid('ok', 'bravo', 3)
  const d = decideOn(store, screen, NOW)
  t.equal(d.winner?.bid.bid_id, 'ok')
  t.same(Object.fromEntries(['expired', 'blocked_seat', 'pending', 'rival', 'low'].map((id) => [id, lossOf(d, id)?.code])), {
    expired: LOSS.expired, blocked_seat: LOSS.seatBlocked, pending: LOSS.creativePending, rival: LOSS.advertiserExcluded, low: LOSS.belowAuctionFloor
  }, 'the floor raised since the imp was issued (1 -> 2) is the floor in force')
})

t.test('deals come before the open auction: PMP at its own price, the open bids lost to a deal', async (t) => {
  const { store, bid } = world(t)
  const deal = { deal_id: 'd1', type: 'PMP', status: 'active', floor_cpm: 3, start_date: '2026-11-01', end_date: '2026-12-31', targeting: {}, invited_seats: ['bravo'] } as unknown as DealRecord
  store.write(() => store.deals.putSync('d1', deal))
  bid('open', 'alpha', 20)
  bid('pmp', 'bravo', 4, { dealid: 'd1' })
  bid('pmp_low', 'charlie', 3.5, { dealid: 'd1' })
  const d = decideOn(store, screen, NOW)
  t.equal(d.tier, 'pmp')
  t.same([d.winner?.bid.bid_id, d.winner?.clearing], ['pmp', 4], 'first price')
  t.equal(lossOf(d, 'open')?.code, LOSS.lostToDeal)
  t.equal(lossOf(d, 'pmp_low')?.code, LOSS.outbid)
  store.write(() => store.deals.putSync('d1', { ...deal, targeting: { venue_type: 'airport' } }))
  const elsewhere = decideOn(store, screen, NOW)
  t.same([elsewhere.tier, lossOf(elsewhere, 'pmp')?.code], ['open_auction', LOSS.invalidDeal], 'a deal targeting airports does not run on a gym screen')
})

t.test('a placement behind its even pace plays before any bid; nothing at all plays the house creative', async (t) => {
  const { store, bid } = world(t)
  const assignment = { assignment_id: 'a1', seat_id: 'alpha', creative_id: 'cr_a', status: 'active', start_date: '2026-11-24', end_date: '2026-11-30', spots_per_day: 24, effective_at: '2026-11-24T00:00:00Z', created_at: '2026-11-24T00:00:00Z' } as unknown as AssignmentRecord
  store.write(() => {
    store.assignments.putSync('a1', assignment)
    store.placements.putSync([screen.screen_id, '2026-11-24', 'a1'] as never, 'a1')
  })
  bid('open', 'bravo', 20)
  const d = decideOn(store, screen, NOW)
  t.equal(d.tier, 'guaranteed', '9 of 24 hours gone, nothing played: the line is behind')
  t.equal(d.assignment?.assignment_id, 'a1')
  t.equal(lossOf(d, 'open')?.code, LOSS.lostToDeal)

  const empty = world(t)
  t.equal(decideOn(empty.store, screen, NOW).creative, undefined, 'no house creative: nothing plays')
  empty.store.write(() => putSetting(empty.store, 'house_creative_id', 'cr_house'))
  const house = decideOn(empty.store, screen, NOW)
  t.same([house.tier, house.creative?.creative_id], ['house', 'cr_house'], 'the operator\'s house creative')
})

t.test('outside operating hours the screen is closed and nothing is settled', async (t) => {
  const { store, bid } = world(t)
  bid('b1', 'alpha', 9)
  const d = decideOn(store, { ...screen, operating_hours: { tue: [['10:00', '18:00']] } } as ScreenRecord, NOW)
  t.same([d.tier, d.losses.length], ['closed', 0], '09:00 local on a Tuesday opening at 10:00')
})

/** A priced placement line (an AI buying agent's package) of seat charlie, with its running campaign. */
function pricedLine (store: Store, id: string, over: Partial<AssignmentRecord>, campaign: Partial<CampaignRecord> = {}): void {
  const a = { assignment_id: id, seat_id: 'charlie', creative_id: 'cr_c', campaign_id: `cmp_${id}`, status: 'active', start_date: '2026-11-24', end_date: '2026-11-30', spots_per_day: 10, effective_at: '2026-11-24T00:00:00Z', created_at: '2026-11-24T00:00:00Z', pacing: 'asap', ...over } as unknown as AssignmentRecord
  store.write(() => {
    store.assignments.putSync(id, a)
    store.placements.putSync([screen.screen_id, '2026-11-24', id] as never, id)
    store.campaigns.putSync(`cmp_${id}`, { campaign_id: `cmp_${id}`, seat_id: 'charlie', status: 'active', budget_usd: 100, spent_usd: 0, pacing: 'asap', start_date: '2026-11-24', end_date: '2026-11-30', ...campaign } as unknown as CampaignRecord)
  })
}

t.test('a preferred placement competes with Preferred deals at its fixed price, ahead of PMP and the open auction', async (t) => {
  const { store, bid } = world(t)
  store.write(() => store.deals.putSync('pd', { deal_id: 'pd', type: 'Preferred', status: 'active', floor_cpm: 3, fixed_cpm: 5, start_date: '2026-11-01', end_date: '2026-12-31', targeting: {}, invited_seats: ['alpha'] } as unknown as DealRecord))
  pricedLine(store, 'pref', { line: 'preferred', cpm: 6 })
  bid('preferred_bid', 'alpha', 5, { dealid: 'pd' })
  bid('open', 'bravo', 20)
  const d = decideOn(store, screen, NOW)
  t.same([d.tier, d.assignment?.assignment_id, d.cpm, d.line], ['preferred', 'pref', 6, 'asg:pref'], 'the placement plays at its fixed price')
  t.same([lossOf(d, 'preferred_bid')?.code, lossOf(d, 'preferred_bid')?.minToWin], [LOSS.outbid, 6.01], 'the deal bid was outbid in its tier')
  t.equal(lossOf(d, 'open')?.code, LOSS.lostToDeal, 'a higher open bid still comes after Preferred')
  store.write(() => store.plays.putSync([screen.screen_id, '2026-11-24', 'asg:pref'] as never, 10))
  t.same(decideOn(store, screen, NOW).winner?.bid.bid_id, 'preferred_bid', 'with its spots for the day played here, the deal wins')
})

t.test('an auction placement bids in the open auction: second price either way, never below the floor', async (t) => {
  const { store, bid } = world(t)
  pricedLine(store, 'auc', { line: 'auction', cpm: 7 })
  bid('b1', 'alpha', 5)
  const d = decideOn(store, screen, NOW)
  t.same([d.tier, d.assignment?.assignment_id, d.cpm], ['open_auction', 'auc', 5 + INCREMENT], 'it wins and pays the runner-up plus the increment')
  t.same([lossOf(d, 'b1')?.code, lossOf(d, 'b1')?.minToWin], [LOSS.outbid, 7.01])
  bid('b2', 'bravo', 9)
  const outbid = decideOn(store, screen, NOW)
  t.same([outbid.winner?.bid.bid_id, outbid.winner?.clearing], ['b2', 7 + INCREMENT], 'a higher bid wins and pays the placement\'s price plus the increment')
  const { store: alone } = world(t)
  pricedLine(alone, 'auc', { line: 'auction', cpm: 7 })
  t.equal(decideOn(alone, screen, NOW).cpm, 2 + INCREMENT, 'alone it pays the floor plus the increment')
  const { store: low } = world(t)
  pricedLine(low, 'auc', { line: 'auction', cpm: 1.5 })
  t.equal(decideOn(low, screen, NOW).tier, 'house', 'below the floor it cannot win')
})

t.test('priced placements play only in their dayparts, while their campaign runs and has budget', async (t) => {
  const afternoon = world(t)
  pricedLine(afternoon.store, 'auc', { line: 'auction', cpm: 7, dayparts: [{ days: ['tue'], start_hour: 13, end_hour: 17 }] })
  t.equal(decideOn(afternoon.store, screen, NOW).tier, 'house', 'at 09:00 a 13:00-17:00 daypart does not play')
  t.equal(decideOn(afternoon.store, screen, NOW + 5 * 3_600_000).assignment?.assignment_id, 'auc', 'at 14:00 it does')
  const spent = world(t)
  pricedLine(spent.store, 'auc', { line: 'auction', cpm: 7 })
  spent.store.write(() => spent.store.campaignDelivery.putSync(['cmp_auc', 'node-2'], { impressions: 0, spent_micros: 99_999_000, day: '2026-11-23', day_spent_micros: 0, started_at: '2026-11-23T00:00:00.000Z' }))
  t.equal(decideOn(spent.store, screen, NOW).tier, 'house', 'a play costs more than the budget left')
  const even = world(t)
  pricedLine(even.store, 'pref', { line: 'preferred', cpm: 6, pacing: 'even' }, { pacing: 'even', budget_usd: 7 })
  // Spent through two nodes of a cluster: pacing reads their sum.
  even.store.write(() => {
    even.store.campaignDelivery.putSync(['cmp_pref', 'node-1'], { impressions: 0, spent_micros: 400_000, day: '2026-11-24', day_spent_micros: 400_000, started_at: '2026-11-24T00:00:00.000Z' })
    even.store.campaignDelivery.putSync(['cmp_pref', 'node-2'], { impressions: 0, spent_micros: 300_000, day: '2026-11-24', day_spent_micros: 300_000, started_at: '2026-11-24T00:00:00.000Z' })
  })
  t.equal(decideOn(even.store, screen, NOW).tier, 'house', 'even pacing: $0.70 spent today, past the $0.67 of the day\'s $1 released by 15:00 UTC (with the hour ahead)')
  t.equal(decideOn(even.store, screen, NOW + 2 * 3_600_000).tier, 'preferred', 'two hours later, $0.75 is released: it plays again')
  const paused = world(t)
  pricedLine(paused.store, 'pref', { line: 'preferred', cpm: 6 }, { status: 'paused' })
  t.equal(decideOn(paused.store, screen, NOW).tier, 'house', 'a paused campaign pays for nothing')
})

t.test('a placement targeted on a live audience plays only while the screen\'s live signals meet it', async (t) => {
  const sensed = { ...screen, capabilities: { fein: true } } as ScreenRecord
  const { store } = world(t)
  pricedLine(store, 'crowd', { line: 'preferred', cpm: 6, audience: { min_faces: 10, min_attention: 0.5 } })
  const measure = (faces: number, attention: number, at: number) => store.write(() => store.fein.putSync(sensed.screen_id, applyUpdate(emptyFein(), { device_id: 'd', live_face_count: faces, attention_score: attention } as AudienceUpdate, at)))
  t.equal(decideOn(store, sensed, NOW).tier, 'house', 'nothing measured: no audience')
  measure(12, 0.6, NOW - 1000)
  t.same([decideOn(store, sensed, NOW).tier, decideOn(store, sensed, NOW).assignment?.assignment_id], ['preferred', 'crowd'], 'twelve people paying attention: it plays')
  measure(12, 0.4, NOW - 1000)
  t.equal(decideOn(store, sensed, NOW).tier, 'house', 'every condition must hold: attention too low')
  measure(3, 0.6, NOW - 1000)
  t.equal(decideOn(store, sensed, NOW).tier, 'house', 'three people: not in the audience')
  measure(12, 0.6, NOW - 11_000)
  t.equal(decideOn(store, sensed, NOW).tier, 'house', 'a measurement past its 10 s is no live audience')
  measure(12, 0.6, NOW - 1000)
  t.equal(decideOn(store, screen, NOW).tier, 'house', 'a screen without sensors never meets it')
})

t.test('decide is pure: the same gathered facts, without a store, give the same spot', async (t) => {
  const local = { date: '2026-11-24', minutes: 540, weekday: 2 } as unknown as Gathered['local']
  const bid = (id: string, seat: string, price: number): Gathered['bids'][number] => ({
    key: [screen.screen_id, id, seat] as never,
    bid: { bid_id: id, seat_id: seat, screen_id: screen.screen_id, price, floor: 2, received_at: NOW - 1000, expires_at: NOW + 60_000, creative_id: 'cr_a', adomain: [] } as unknown as StoredBid,
    creative: creative('cr_a'),
    seatApproved: seat !== 'suspended'
  })
  const g: Gathered = { screen, now: NOW, local, open: true, bids: [bid('b1', 'alpha', 5), bid('b2', 'bravo', 3), bid('b3', 'suspended', 9)], placements: [], house: undefined }
  const d = decide(g)
  t.equal(d.tier, 'open_auction')
  t.equal(d.winner?.bid.bid_id, 'b1', 'the best approved bid wins')
  t.equal(d.winner?.clearing, 3 + INCREMENT, 'at the runner-up\'s price plus the increment')
  t.same(d.losses.map((l) => [l.candidate.bid.bid_id, l.code]).sort(), [['b2', LOSS.outbid], ['b3', LOSS.seatBlocked]])
  t.same(decide(g), d, 'asked again, the same decision: it read nothing')
  t.same(decide({ ...g, open: false }), { tier: 'closed', local, losses: [] }, 'a closed screen decides nothing')
})
