import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import type { AppliedAt } from '../../cluster/partition-log.js'
import { partitionOf } from '../../cluster/screen-partitions.js'
import { Notices } from '../../notify/notices.js'
import { openStore } from '../../store/store.js'
import { bookApplied, bookKeyOf } from '../book.js'
import type { SettleCommand, StoredBid } from '../records.js'
import { ScreenClaims } from './claims.js'
import { settlementMachine } from './fenced-settlements.js'

// A partition's log applying settlements of bids, apart from the engine (a real LMDB store, the apply called as the
// log calls it, in order): what every node does, and what only the deciding node does.

const NOW = Date.parse('2026-11-29T12:00:00Z')
const PARTITIONS = 16
const SCREEN = 'scr_fence'
const P = partitionOf(SCREEN, PARTITIONS)
const KEEP_MS = 15 * 60_000

function world (t: Test, node: string) {
  const store = openStore(mkdtempSync(join(tmpdir(), 'oohbid-fenced-')))
  t.teardown(() => store.close())
  const notices = new Notices(store)
  const machine = settlementMachine(store, notices, { node, partition: P, keepMs: KEEP_MS })
  const bid = (id: string, over: Partial<StoredBid> = {}): StoredBid => {
    const stored = { bid_id: id, response_id: 'r', seat_id: 'alpha', impid: `imp_${id}`, screen_id: SCREEN, price: 5, floor: 1, multiplier: 1, creative_id: 'cr', adomain: [], received_at: NOW - 1000, expires_at: NOW + 60_000, ...over } as StoredBid
    store.write(() => store.bids.putSync(bookKeyOf(stored), stored))
    return stored
  }
  let seq = 0
  const apply = (command: SettleCommand, from: string, logTime = NOW) => store.write(() => machine.apply(command, at(from, logTime)))
  const at = (from: string, logTime: number): AppliedAt => ({ log: `PART_${P}`, seq: ++seq, logTime, from: { node: from, incarnation: 'i1' } })
  const hold = (key: string, url: string) => store.write(() => notices.hold(key, [{ kind: 'nurl', url, seat_id: 'alpha' }], NOW))
  const queued = () => [...store.notices.getRange()].map(({ value }) => value.url)
  return { store, notices, machine, bid, apply, at, hold, queued }
}

const settling = (key: string, ...bids: StoredBid[]): SettleCommand => ({ op: 'settle_bids', key, bids: bids.map((b) => [b.received_at, ...bookKeyOf(b), b.bid_id]) })

t.test('an accepted settlement takes its bids out of every copy, and the deciding node sends the notices it held', async (t) => {
  const deciding = world(t, 'node-1')
  const other = world(t, 'node-2')
  for (const w of [deciding, other]) {
    w.bid('b1')
    w.hold('stl_1', 'https://alpha.example/win')
  }
  const b1 = deciding.bid('b1')
  t.same(deciding.apply(settling('stl_1', b1), 'node-1'), { status: 'accepted' })
  t.same(other.apply(settling('stl_1', b1), 'node-1'), { status: 'accepted' }, 'every node decides the same')
  for (const w of [deciding, other]) t.equal(w.store.bids.getCount(), 0, 'the bid left every copy of the book')
  t.same(deciding.queued(), ['https://alpha.example/win'], 'the deciding node queues its held notice')
  t.equal(deciding.store.heldNotices.getCount(), 0)
  t.same(other.queued(), [], 'no other node sends it')
  t.equal(other.store.heldNotices.getCount(), 1, 'another node\'s held notices are its own settlements\' (this one waits for its sweep)')
})

t.test('a second settlement of a bid is refused, wherever it was decided, and its notices dropped', async (t) => {
  const w = world(t, 'node-2')
  const b1 = w.bid('b1')
  const b2 = w.bid('b2', { seat_id: 'bravo' })
  t.same(w.apply(settling('stl_1', b1), 'node-1'), { status: 'accepted' }, 'the old owner\'s decision, landed first')
  w.hold('stl_2', 'https://alpha.example/win-again')
  t.same(w.apply(settling('stl_2', b1, b2), 'node-2'), { status: 'refused', reason: 'settled' }, 'a decision from a book that still had b1')
  t.same(w.queued(), [], 'its win notice is never sent')
  t.equal(w.store.heldNotices.getCount(), 0, 'and not kept')
  t.ok(w.store.bids.get(bookKeyOf(b2)), 'what a refused settlement took stays in the book, for the next decision')
})

t.test('a settlement the log refused before the machine (fenced, late) drops its node\'s held notices', async (t) => {
  const w = world(t, 'node-1')
  const b1 = w.bid('b1')
  w.hold('stl_1', 'https://alpha.example/win')
  w.store.write(() => w.machine.refused(settling('stl_1', b1), w.at('node-1', NOW)))
  t.equal(w.store.heldNotices.getCount(), 0)
  t.same(w.queued(), [])
})

t.test('the book does not take a settled bid back; a later bid of the seat on the same imp is new', async (t) => {
  const w = world(t, 'node-2')
  const b1 = w.bid('b1')
  w.apply(settling('stl_1', b1), 'node-1')
  const claims = new ScreenClaims(0)
  const key = bookKeyOf(b1)
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

t.test('a settlement is forgotten once the book stream no longer holds its bids, by log time', async (t) => {
  const w = world(t, 'node-1')
  const b1 = w.bid('b1')
  w.apply(settling('stl_1', b1), 'node-1')
  t.equal(w.store.settledBids.getCount(), 1)
  const b2 = w.bid('b2')
  w.apply(settling('stl_2', b2), 'node-1', NOW - 1000 + KEEP_MS - 1)
  t.equal(w.store.settledBids.getCount(), 2, 'kept while the book stream may bring the bid')
  const b3 = w.bid('b3', { received_at: NOW + KEEP_MS })
  w.apply(settling('stl_3', b3), 'node-1', NOW - 1000 + KEEP_MS + 1)
  t.same([...w.store.settledBids.getRange()].map(({ value }) => value), ['b3'], 'older ones go as the log applies later entries')
})
