import { impTag } from '../inventory/adslots/imp-ids.js'
import { rewriteInBatches, runOnce } from '../store/rewrite.js'
import type { Store } from '../store/store.js'
import type { ScreenClaims } from './auction/claims.js'
import type { BookKey, ExpiryKey, StoredBid } from './records.js'
import { partitionOf } from '../cluster/screen-partitions.js'

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

/** Whether a settlement its partition's log accepted took this bid (auction/fenced-settlements.ts): the book does not take it back. */
export function settledInLog (store: Store, partitions: number, key: BookKey, bid: Pick<StoredBid, 'received_at' | 'bid_id'>): boolean {
  return store.settledBids.get([partitionOf(key[0], partitions), bid.received_at, ...key])?.[0] === bid.bid_id
}

/**
 * What a cluster node derives from a bid another node took, once the applier has written it into the book (inside its
 * transaction): the bid's expiry entry, and the mark on its screen's claim. A decision pending on that screen may have
 * taken an earlier bid this one replaced, and must read back what it took before it removes it (settle.ts), exactly
 * as when an intake on this node stores one (applyIntakes). A bid its partition's log has settled already (the book
 * read again from its start by a node taking the partition on) goes again at once: it never wins twice.
 */
export function bookApplied (store: Store, claims: Pick<ScreenClaims, 'mark' | 'intakeBegins' | 'intakeEnds'>, partitions: number, table: string, key: BookKey): void {
  if (table !== 'bids') return
  const bid = store.bids.get(key)
  if (bid === undefined) return
  if (settledInLog(store, partitions, key, bid)) {
    store.bids.removeSync(key)
    return
  }
  claims.intakeBegins()
  store.afterEnd(() => claims.intakeEnds())
  store.bidExpiry.putSync(expiryKeyOf(bid), 1)
  claims.mark(bid.screen_id)
}

/**
 * Takes out of this node's book the bids on the screens `belongs` names (a partition of the screens a cluster node
 * takes on: another owner may have settled them since, and the engine's book says which are live), but for those
 * `keep` names (its own changes, not shipped yet). Call inside Store.write.
 */
export function forgetBids (store: Store, belongs: (screenId: string) => boolean, keep: (key: BookKey) => boolean): void {
  for (const key of store.bids.getKeys()) if (belongs(key[0]) && !keep(key)) store.bids.removeSync(key)
}
