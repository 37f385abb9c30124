import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { ScreenClaims } from './claims.js'
import { expireBids } from './expiry.js'
import { CLUSTER_EXPIRY_GRACE_MS, clusterShare } from '../../cluster/share.js'
import { partitionOf } from '../../cluster/screen-partitions.js'
import { monotonicMs, ServedPartitions } from '../../cluster/served-partitions.js'
import { applySettlements, settlementOf } from './settle.js'
import { LOSS } from '../loss-codes.js'
import { Notices } from '../../notify/notices.js'
import { openStore, type Store } from '../../store/store.js'
import type { ScreenRecord } from '../../inventory/records.js'
import type { SeatRecord } from '../../accounts/records.js'
import { bookKeyOf, expiryKeyOf } from '../book.js'
import type { BookKey, SettleCommand, StoredBid } from '../records.js'

// Settling a decision's bids, apart from deciding them (no service, no HTTP, a real LMDB store): what a settlement
// takes out of the book and tells each bid, the screens' claims across threads, and the expiry job beside them.

const NOW = Date.parse('2026-11-24T15:00:00Z')
const screen = { screen_id: 'scr_1', name: 'Lobby', location: { venue_type: 'gym', city: 'Austin', state: 'TX', country: 'US', lat: 30, lng: -97 }, slot_duration_seconds: 15 } as unknown as ScreenRecord

function world (t: Test): { store: Store, notices: Notices, bid: (id: string, seat: string, price: number, over?: Partial<StoredBid>) => { key: BookKey, bid: StoredBid } } {
  const store = openStore(mkdtempSync(join(tmpdir(), 'oohbid-settle-')))
  t.teardown(() => store.close())
  store.write(() => {
    store.screens.putSync(screen.screen_id, screen)
    for (const seat of ['alpha', 'bravo']) store.seats.putSync(seat, { seat_id: seat, status: 'approved' } as unknown as SeatRecord)
  })
  const bid = (id: string, seat: string, price: number, over: Partial<StoredBid> = {}) => {
    const stored = {
      bid_id: id, response_id: `r-${id}`, seat_id: seat, impid: `imp_${id}`, screen_id: screen.screen_id, price, floor: 2, multiplier: 1, creative_id: `cr_${seat}`, adomain: [],
      received_at: NOW - 1000, expires_at: NOW + 60_000, nurl: `https://${seat}.example/win?p=\${AUCTION_PRICE}`, lurl: `https://${seat}.example/loss?c=\${AUCTION_LOSS}`, ...over
    } as StoredBid
    const key = bookKeyOf(stored)
    store.write(() => {
      store.bids.putSync(key, stored)
      store.bidExpiry.putSync(expiryKeyOf(stored), 1)
    })
    return { key, bid: stored }
  }
  return { store, notices: new Notices(store), bid }
}

const queued = (store: Store) => [...store.notices.getRange()].map(({ value }) => value.url).sort()

t.test('a settlement takes its bids out of the book, tells each its outcome and counts the win once', async (t) => {
  const { store, notices, bid } = world(t)
  const won = bid('b1', 'alpha', 7)
  const lost = bid('b2', 'bravo', 5)
  const s = settlementOf(store, screen, [{ candidate: lost, code: LOSS.outbid, minToWin: 7.01 }], { ...won, clearing: 5.01 }, 'open_auction', 'spt_1', NOW)
  t.same(store.bids.getCount(), 2, 'deciding writes nothing')
  store.write(() => applySettlements({ store, notices }, [{ settlement: s, at: NOW, check: false }]))
  t.equal(store.bids.getCount(), 0, 'both bids left the book')
  t.same(queued(store), ['https://alpha.example/win?p=5.01', 'https://bravo.example/loss?c=102'])
  t.match(store.stats.get(['alpha', Math.floor(NOW / 3_600_000) * 3_600_000, '']), { wins: 1, win_cpm_sum: 5.01 })
  t.equal(store.bidExpiry.getCount(), 2, 'their expiry entries wait for the expiry job, which drops them')
  t.equal(expireBids({ store, notices, claims: new ScreenClaims(0) }, NOW + 120_000), 0, 'no bid left to expire')
  t.equal(store.bidExpiry.getCount(), 0)
})

t.test('a bid its seat sent again since the decision stays for the next one, where a replacement may have happened', async (t) => {
  const { store, notices, bid } = world(t)
  const taken = bid('b1', 'alpha', 7)
  const s = settlementOf(store, screen, [{ candidate: taken, code: LOSS.outbid }], undefined, 'open_auction', 'spt_1', NOW)
  const again = bid('b1', 'alpha', 8, { received_at: NOW - 10 })
  t.same(again.key, taken.key, 'the same imp and seat: the same place in the book')
  store.write(() => applySettlements({ store, notices }, [{ settlement: s, at: NOW, check: true }]))
  t.equal(store.bids.get(taken.key)?.price, 8, 'the new bid is still in the book')
  t.same(queued(store), ['https://alpha.example/loss?c=102'], 'the bid the decision took heard its outcome')
})

t.test('claims: one thread decides a screen at a time; a waiting thread wakes when it is released', async (t) => {
  const one = new ScreenClaims(1)
  const two = new ScreenClaims(2, { buffer: one.buffer, counters: one.counters })
  t.equal(one.take('scr_1'), 'taken')
  t.equal(one.take('scr_1'), 'mine', 'held already: this thread\'s decision is not applied yet')
  t.equal(two.take('scr_1'), 'other')
  t.equal(two.take('scr_2'), 'taken', 'other screens are free')
  two.release('scr_1')
  t.equal(two.take('scr_1'), 'other', 'a thread cannot release another\'s claim')
  t.notOk(one.changed('scr_1'))
  two.mark('scr_1')
  t.ok(one.changed('scr_1'), 'a bid stored on a screen being decided marks its claim')
  two.mark('scr_9')
  t.equal(one.take('scr_9'), 'taken')
  t.notOk(one.changed('scr_9'), 'a screen nobody decides keeps no mark for a later claim')
  t.notOk(one.intakeUnderway)
  two.intakeBegins()
  t.ok(one.intakeUnderway, 'an intake being applied, seen from every thread')
  two.intakeEnds()
  t.notOk(one.intakeUnderway)
  const seen = two.released
  const started = performance.now()
  // Atomics.wait blocks this thread, so the release has to come from another one.
  const { Worker } = await import('node:worker_threads')
  const worker = new Worker(`const { workerData: w } = require('node:worker_threads'); setTimeout(() => { const released = new Int32Array(w.counters); Atomics.add(released, 0, 1); Atomics.notify(released, 0) }, 30)`, { eval: true, workerData: { counters: one.counters } })
  t.ok(two.wait(seen, performance.now() + 5000), 'woken before the deadline')
  t.ok(performance.now() - started < 4000, 'by the release, not the deadline')
  await worker.terminate()
  one.release('scr_1')
  t.equal(two.take('scr_1'), 'taken', 'released by its holder')
  t.notOk(two.wait(two.released, performance.now() - 1), 'a deadline passed answers false at once')
  one.take('scr_3')
  one.take('scr_4')
  one.releaseAll(1)
  t.equal(two.take('scr_3'), 'taken', 'a dead thread\'s claims are released together')
  t.equal(two.take('scr_4'), 'taken')
})

t.test('the expiry job leaves a screen a hot thread is deciding to its next pass', async (t) => {
  const { store, notices, bid } = world(t)
  bid('b1', 'alpha', 7, { expires_at: NOW + 1000 })
  const supervisor = new ScreenClaims(0)
  const hot = new ScreenClaims(1, { buffer: supervisor.buffer, counters: supervisor.counters })
  t.equal(hot.take(screen.screen_id), 'taken')
  t.equal(expireBids({ store, notices, claims: supervisor }, NOW + 2000), 0, 'skipped while claimed')
  t.equal(store.bids.getCount(), 1)
  hot.release(screen.screen_id)
  t.equal(expireBids({ store, notices, claims: supervisor }, NOW + 2000), 1, 'settled on the next pass')
  t.same(queued(store), ['https://alpha.example/loss?c=2'])
  t.equal(hot.take(screen.screen_id), 'taken', 'the job released its claim with its transaction')
})

t.test('on a cluster node the expiry job waits out the grace, settles the bids of the screens it serves in their partition\'s log, leaves those it is taking on, and drops its copy of the others', async (t) => {
  const served = new ServedPartitions(16)
  served.set(partitionOf(screen.screen_id, 16), monotonicMs() + 60_000, true)
  const others = Array.from({ length: 64 }, (_, i) => `other-${i}`).filter((id) => !served.serves(partitionOf(id, 16)))
  const elsewhere = others[0]!
  const takingOn = others.find((id) => partitionOf(id, 16) !== partitionOf(elsewhere, 16))!
  served.set(partitionOf(takingOn, 16), 0, true)
  const proposed: Array<[number, SettleCommand]> = []
  const settle = async (partition: number, command: SettleCommand) => { proposed.push([partition, command]); return true }
  const store = openStore(mkdtempSync(join(tmpdir(), 'oohbid-settle-')), undefined, undefined, { replicate: true, share: clusterShare('node-1', served, { leasedLeft: () => 0, ask: () => {} }, { settle }) })
  t.teardown(() => store.close())
  const notices = new Notices(store)
  const bids = ([['served', screen.screen_id], ['elsewhere', elsewhere], ['taking-on', takingOn]] as const).map(([name, screenId], i) => {
    const stored = { bid_id: `b${i}`, response_id: 'r', seat_id: 'alpha', impid: `imp_${i}`, screen_id: screenId, price: 5, floor: 2, multiplier: 1, creative_id: 'cr', adomain: [], received_at: NOW - 1000, expires_at: NOW, lurl: `https://alpha.example/${name}?c=\${AUCTION_LOSS}` } as StoredBid
    return stored
  })
  store.write(() => {
    for (const id of [screen.screen_id, elsewhere, takingOn]) store.screens.putSync(id, { ...screen, screen_id: id })
    for (const b of bids) {
      store.bids.putSync(bookKeyOf(b), b)
      store.bidExpiry.putSync(expiryKeyOf(b), 1)
    }
  })
  const recorded = store.changes!.recorded
  const claims = new ScreenClaims(0)
  t.equal(expireBids({ store, notices, claims }, NOW + 1000), 0, 'within the grace: the screen\'s previous owner may have taken them')
  t.equal(store.bids.getCount(), 3)
  t.equal(expireBids({ store, notices, claims }, NOW + CLUSTER_EXPIRY_GRACE_MS + 1), 1, 'past it: one bid settled with a notice, the one on the screen this node serves')
  t.same([...store.bids.getRange()].map(({ value }) => value.bid_id), ['b2'], 'the bid of the partition being taken on waits; the others are out of this node\'s book')
  t.same(queued(store), [], 'its notice waits for the log\'s verdict')
  t.same([...store.heldNotices.getRange()].map(({ value }) => value.draft.url), ['https://alpha.example/served?c=2'], 'held under the settlement')
  t.same(proposed.map(([partition, c]) => [partition, c.op, c.bids]), [[partitionOf(screen.screen_id, 16), 'settle_bids', [[NOW - 1000, ...bookKeyOf(bids[0]!), 'b0']]]], 'proposed to the screen\'s partition\'s log once committed')
  t.equal(proposed[0]![1].key, [...store.heldNotices.getRange()][0]!.key[0], 'under the key its notices are held by')
  t.equal(store.changes!.recorded, recorded, 'no removal is recorded to ship: the log removes the bid on every node')
  served.set(partitionOf(takingOn, 16), monotonicMs() + 60_000, true)
  t.equal(expireBids({ store, notices, claims }, NOW + CLUSTER_EXPIRY_GRACE_MS + 2), 1, 'served, the partition taken on settles its expired bid')
  t.equal(store.bids.getCount(), 0)
})
