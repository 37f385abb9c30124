import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { bookKey, bookKeyOf, expiryKeyOf, tagBookKeys } from './book.js'
import { ImpIds } from '../inventory/adslots/imp-ids.js'
import { Notices } from '../notify/notices.js'
import { openStore, type Store } from '../store/store.js'
import { applySettlements } from './auction/settle.js'
import type { StoredBid } from './records.js'

// The book's keys: a stored bid is found by its imp id's tag, and bids an earlier version keyed by the whole imp id
// are moved once (no service: a real LMDB store).

const NOW = Date.parse('2026-11-26T15:00:00Z')

function fresh (t: Test): Store {
  const dir = mkdtempSync(join(tmpdir(), 'oohbid-book-'))
  const store = openStore(dir)
  t.teardown(async () => { await store.close(); rmSync(dir, { recursive: true, force: true }) })
  return store
}

function storedBid (ids: ImpIds, i: number, seat: string): StoredBid {
  const screen = `scr_${String(i % 7).padStart(20, '0')}`
  const impid = ids.issue({ screenId: screen, seatId: seat, floor: 2, multiplier: 1, issuedAt: NOW, expiresAt: NOW + 60_000 + i })
  return { bid_id: `b${i}`, response_id: 'r', seat_id: seat, impid, screen_id: screen, price: 3, floor: 2, multiplier: 1, creative_id: 'cr_1', adomain: [], received_at: NOW, expires_at: NOW + 60_000 + i }
}

t.test('a bid is keyed by its imp id\'s tag: short, and the same place for a seat\'s later bid on the imp', async (t) => {
  const store = fresh(t)
  const ids = new ImpIds(store)
  const bid = storedBid(ids, 1, 'alpha')
  const key = bookKeyOf(bid)
  t.equal(key[1], bid.impid.slice(bid.impid.lastIndexOf('.') + 1))
  t.equal(key[1].length, 16, 'the tag: 16 characters')
  t.ok(bid.impid.length > 5 * key[1].length, `where the imp id has ${bid.impid.length}`)
  t.same(bookKey(bid.screen_id, key[1], bid.seat_id), key, 'a key already holding the tag stays as it is')
  t.not(bookKeyOf(storedBid(ids, 1, 'alpha'))[1], key[1], 'another imp id issued for the same spot has its own tag')
})

t.test('bids and expiry entries keyed by whole imp ids move to their tags once, and old settlements still find them', async (t) => {
  const store = fresh(t)
  const ids = new ImpIds(store)
  const bids = Array.from({ length: 12_000 }, (_, i) => storedBid(ids, i, i % 2 === 0 ? 'alpha' : 'bravo'))
  store.write(() => {
    for (const b of bids) {
      store.bids.putSync([b.screen_id, b.impid, b.seat_id], b)
      store.bidExpiry.putSync([b.expires_at, b.screen_id, b.impid, b.seat_id], 1)
    }
  })
  tagBookKeys(store)
  t.equal(store.bids.getCount(), 12_000)
  t.equal(store.bidExpiry.getCount(), 12_000)
  t.same([...store.bids.getKeys()].filter((k) => k[1].includes('.')), [], 'no bid keyed by a whole imp id is left')
  t.same([...store.bidExpiry.getKeys()].filter((k) => k[2].includes('.')), [], 'nor any expiry entry')
  t.same(store.bids.get(bookKeyOf(bids[11_999]!)), bids[11_999], 'each bid under its new key, unchanged')
  t.equal(store.bidExpiry.get(expiryKeyOf(bids[5]!)), 1)

  // A settlement journaled before the upgrade names its bids by the whole imp id.
  const old = bids[7]!
  const notices = new Notices(store)
  store.write(() => applySettlements({ store, notices }, [{ settlement: { taken: [{ key: [old.screen_id, old.impid, old.seat_id], received_at: old.received_at, bid_id: old.bid_id }], notices: [] }, at: NOW, check: true }]))
  t.equal(store.bids.get(bookKeyOf(old)), undefined, 'a settlement replayed from an old journal takes its bid')
  t.equal(store.bids.getCount(), 11_999)

  store.write(() => store.bids.putSync([old.screen_id, old.impid, old.seat_id], old))
  tagBookKeys(store)
  t.same(store.bids.get([old.screen_id, old.impid, old.seat_id]), old, 'the move runs once: a later start reads no bid')
})
