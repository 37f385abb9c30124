import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import type { AppliedAt } from '../../cluster/partition-log.js'
import { partitionOf } from '../../cluster/screen-partitions.js'
import { Notices } from '../../notify/notices.js'
import { openStore } from '../../store/store.js'
import { bookApplied, bookKeyOf, expiryKeyOf } from '../book.js'
import type { SettleCommand, SettledBid, StoredBid } from '../records.js'
import { ScreenClaims } from './claims.js'
import { PENDING_RESOLVED_AFTER_MS, pendSettlement, resolvePending, settlementMachine } from './fenced-settlements.js'

// A partition's log applying settlements of bids, apart from the engine (a real LMDB store, the apply called as the
// log calls it, in order): what every node does, and what only the deciding node does with what it set aside.

const NOW = Date.parse('2026-11-29T12:00:00Z')
const PARTITIONS = 16
const SCREEN = 'scr_fence'
const P = partitionOf(SCREEN, PARTITIONS)
const KEEP_MS = 15 * 60_000

const identity = (b: StoredBid): SettledBid => [b.received_at, ...bookKeyOf(b), b.bid_id]
const settling = (key: string, ...bids: StoredBid[]): SettleCommand => ({ op: 'settle_bids', key, bids: bids.map(identity), keep_ms: KEEP_MS })

function world (t: Test, node: string) {
  const store = openStore(mkdtempSync(join(tmpdir(), 'oohbid-fenced-')))
  t.teardown(() => store.close())
  const notices = new Notices(store)
  const machine = settlementMachine(store, notices, { node, partition: P })
  const bid = (id: string, over: Partial<StoredBid> = {}): StoredBid => {
    const stored = { bid_id: id, response_id: 'r', seat_id: 'alpha', impid: `imp_${id}`, screen_id: SCREEN, price: 5, floor: 1, multiplier: 1, creative_id: 'cr', adomain: [], received_at: NOW - 1000, expires_at: NOW + 60_000, ...over } as StoredBid
    store.write(() => {
      store.bids.putSync(bookKeyOf(stored), stored)
      store.bidExpiry.putSync(expiryKeyOf(stored), 1)
    })
    return stored
  }
  let seq = 0
  const at = (from: string, logTime: number): AppliedAt => ({ log: `PART_${P}`, seq: ++seq, logTime, from: { node: from, incarnation: 'i1' } })
  const apply = (command: SettleCommand, from: string, logTime = NOW) => store.write(() => machine.apply(command, at(from, logTime)))
  /** What a decision on this node does (settle.ts applySettlements, fenced): its bids out of this copy, set aside with its notice. */
  const decide = (key: string, url: string, ...bids: StoredBid[]) => store.write(() => {
    for (const b of bids) store.bids.removeSync(bookKeyOf(b))
    notices.hold(key, [{ kind: 'nurl', url, seat_id: 'alpha' }], NOW)
    pendSettlement(store, key, { partition: P, at: NOW, taken: bids.map(identity), bids })
  })
  const queued = () => [...store.notices.getRange()].map(({ value }) => value.url)
  const book = () => [...store.bids.getRange()].map(({ value }) => value.bid_id).sort()
  return { store, notices, machine, bid, apply, at, decide, queued, book }
}

t.test('an accepted settlement takes its bids out of every copy, and the deciding node sends the notices it held', async (t) => {
  const deciding = world(t, 'node-1')
  const other = world(t, 'node-2')
  const b1 = deciding.bid('b1')
  other.bid('b1')
  deciding.decide('stl_1', 'https://alpha.example/win', b1)
  t.same(deciding.apply(settling('stl_1', b1), 'node-1'), { status: 'accepted' })
  t.same(other.apply(settling('stl_1', b1), 'node-1'), { status: 'accepted' }, 'every node decides the same')
  t.same(other.book(), [], 'the bid left every copy of the book')
  t.same(deciding.queued(), ['https://alpha.example/win'], 'the deciding node queues its held notice')
  t.equal(deciding.store.heldNotices.getCount() + deciding.store.pendingSettlements.getCount(), 0, 'and keeps nothing aside')
  t.same(other.queued(), [], 'no other node sends it')
})

t.test('a second settlement of a bid is refused: its notices go, and what it took that the log did not comes back', async (t) => {
  const w = world(t, 'node-2')
  const b1 = w.bid('b1')
  const b2 = w.bid('b2', { seat_id: 'bravo' })
  t.same(w.apply(settling('stl_1', b1), 'node-1'), { status: 'accepted' }, 'the old owner\'s decision, landed first')
  w.bid('b1')
  w.decide('stl_2', 'https://alpha.example/win-again', b1, b2)
  t.same(w.apply(settling('stl_2', b1, b2), 'node-2'), { status: 'refused', reason: 'settled' }, 'a decision from a book that still had b1')
  t.same(w.queued(), [], 'its win notice is never sent')
  t.equal(w.store.heldNotices.getCount() + w.store.pendingSettlements.getCount(), 0, 'and nothing is kept aside')
  t.same(w.book(), ['b2'], 'b2 is back in the book for the next decision; b1, which the log settled, is not')
  t.equal(w.store.bidExpiry.getCount(), 2, 'with its expiry entry (b1\'s stale one is dropped by the expiry job)')
})

t.test('a settlement the log refused before the machine (fenced, late) puts its bids back and drops its notices', async (t) => {
  const w = world(t, 'node-1')
  const b1 = w.bid('b1')
  w.decide('stl_1', 'https://alpha.example/win', b1)
  t.same(w.book(), [])
  w.store.write(() => w.machine.refused(settling('stl_1', b1), w.at('node-1', NOW)))
  t.same(w.book(), ['b1'])
  t.equal(w.store.heldNotices.getCount(), 0)
  t.same(w.queued(), [])
  const b1again = { ...b1, bid_id: 'b1-new', received_at: NOW }
  w.store.write(() => w.store.bids.putSync(bookKeyOf(b1again), b1again))
  w.decide('stl_2', 'https://alpha.example/win', b1again)
  w.store.write(() => w.store.bids.putSync(bookKeyOf(b1again), { ...b1again, bid_id: 'b1-newest' }))
  w.store.write(() => w.machine.refused(settling('stl_2', b1again), w.at('node-1', NOW)))
  t.same(w.book(), ['b1-newest'], 'a bid whose place a newer bid took stays out')
})

t.test('the book does not take a settled bid back; a later bid of the seat on the same imp is new', async (t) => {
  const w = world(t, 'node-2')
  const b1 = w.bid('b1')
  w.apply(settling('stl_1', b1), 'node-1')
  const claims = new ScreenClaims(0)
  const key = bookKeyOf(b1)
  w.store.write(() => w.store.bidExpiry.removeSync(expiryKeyOf(b1)))
  // As the applier writes a row of the book stream (read again from its start), then derives from it.
  w.store.write(() => {
    w.store.bids.putSync(key, b1)
    bookApplied(w.store, claims, PARTITIONS, 'bids', key)
  })
  t.equal(w.store.bids.get(key), undefined, 'the settled bid goes again at once')
  t.equal(w.store.bidExpiry.getCount(), 0, 'with nothing derived from it')
  const again = { ...b1, bid_id: 'b1-again', received_at: NOW }
  w.store.write(() => {
    w.store.bids.putSync(key, again)
    bookApplied(w.store, claims, PARTITIONS, 'bids', key)
  })
  t.equal(w.store.bids.get(key)?.bid_id, 'b1-again', 'the seat\'s new bid stays')
})

t.test('a settlement is forgotten once the book stream no longer holds its bids, by log time and the proposer\'s keep', async (t) => {
  const w = world(t, 'node-1')
  w.apply(settling('stl_1', w.bid('b1')), 'node-1')
  t.equal(w.store.settledBids.getCount(), 1)
  w.apply(settling('stl_2', w.bid('b2')), 'node-1', NOW - 1000 + KEEP_MS - 1)
  t.equal(w.store.settledBids.getCount(), 2, 'kept while the book stream may bring the bid')
  w.apply(settling('stl_3', w.bid('b3', { received_at: NOW + KEEP_MS })), 'node-1', NOW - 1000 + KEEP_MS + 1)
  t.same([...w.store.settledBids.getRange()].map(({ value }) => value), [['b3', 'stl_3']], 'older ones go as the log applies later entries')
})

t.test('settlements whose verdict this node never applied are decided from the log\'s rows, once the log is well past them', async (t) => {
  const w = world(t, 'node-1')
  const lost = w.bid('lost')
  const landed = w.bid('landed')
  w.decide('stl_lost', 'https://alpha.example/lost', lost)
  w.decide('stl_landed', 'https://alpha.example/landed', landed)
  // The second landed and was accepted, but this node read the log on from a checkpoint past it: only its row came.
  w.store.write(() => w.store.settledBids.putSync([P, landed.received_at, ...bookKeyOf(landed)], ['landed', 'stl_landed']))
  let logTime = NOW + PENDING_RESOLVED_AFTER_MS
  resolvePending(w.store, w.notices, () => logTime)
  t.equal(w.store.pendingSettlements.getCount(), 2, 'not while their commands may still land')
  logTime += 1
  resolvePending(w.store, w.notices, () => logTime)
  t.same(w.queued(), ['https://alpha.example/landed'], 'the one the log took counted: its notice goes')
  t.same(w.book(), ['lost'], 'the one that never landed did not: its bid is back, its notice dropped')
  t.equal(w.store.heldNotices.getCount() + w.store.pendingSettlements.getCount(), 0)
})
