import { impTag } from '../inventory/adslots/imp-ids.js'
import { rewriteInBatches, runOnce } from '../store/rewrite.js'
import type { Store } from '../store/store.js'
import type { BookKey, ExpiryKey, StoredBid } from './records.js'

/**
 * The book key of a bid (BookKey). The imp id's tag, not the whole id, keeps the key short: every decision reads each
 * key of its screen's book and removes it, and a settlement's journal frame names them all. A key whose second part
 * is a whole imp id (a journal written before tags) gives the same.
 */
export function bookKey (screenId: string, impid: string, seatId: string): BookKey {
  return [screenId, impTag(impid), seatId]
}

export function bookKeyOf (bid: Pick<StoredBid, 'screen_id' | 'impid' | 'seat_id'>): BookKey {
  return bookKey(bid.screen_id, bid.impid, bid.seat_id)
}

export function expiryKeyOf (bid: Pick<StoredBid, 'expires_at' | 'screen_id' | 'impid' | 'seat_id'>): ExpiryKey {
  return [bid.expires_at, bid.screen_id, impTag(bid.impid), bid.seat_id]
}

/**
 * Keys by tag the bids and expiry entries an earlier version keyed by the whole imp id, once, a batch at a time. The
 * supervisor runs it at start, before it replays the hot threads' journals: a replayed settlement names its bids in
 * either form (bookKey), and must find them where this version looks.
 */
export function tagBookKeys (store: Store): void {
  runOnce(store, 'book_keys', () => {
    rewriteInBatches(store, store.bids, (key, bid) => {
      const tagged = bookKey(key[0], key[1], key[2])
      if (tagged[1] === key[1]) return
      store.bids.removeSync(key)
      store.bids.putSync(tagged, bid)
    })
    rewriteInBatches(store, store.bidExpiry, (key) => {
      const tag = impTag(key[2])
      if (tag === key[2]) return
      store.bidExpiry.removeSync(key)
      store.bidExpiry.putSync([key[0], key[1], tag, key[3]], 1)
    })
  })
}
