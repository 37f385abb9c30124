import type { Store } from '../../store/store.js'
import type { ScreenClaims } from './claims.js'
import { randomUUID } from 'node:crypto'
import { applySettlements, lossSettlement, type SettleDeps } from './settle.js'
import { LOSS } from '../loss-codes.js'
import { bookKey } from '../book.js'
import type { BookKey, ExpiryKey, StoredBid } from '../records.js'

/**
 * Settles stored bids whose imp expired before any auction on their screen took them: each gets its lurl with
 * ${AUCTION_LOSS} 2 (impression opportunity expired) and the legacy bid.lost. Runs with the other clock-driven jobs;
 * a batch per pass keeps one pass short. A screen a hot thread is deciding (claims) is left to the next pass: that
 * decision may have taken the bid just before its imp expired, and its writes are not applied yet.
 *
 * How long a bid waits past its expiry, and which node settles it (its notices, and on a cluster node a settlement
 * in its screen's partition's log, Share.settlements) are the node's share of the market to say
 * (Store.share.expiry). A node down when its bids expire settles them when it is back, if it still decides their
 * screens.
 */
export function expireBids (deps: SettleDeps & { claims: ScreenClaims }, now: number, batch = 5000): number {
  const store: Store = deps.store
  const share = store.share
  const until = now - share.expiryGraceMs
  const due = [...store.bidExpiry.getKeys({ end: [until, '\uffff'], limit: batch } as never)] as unknown as ExpiryKey[]
  if (due.length === 0) return 0
  const settling = new Map<string, Array<{ key: BookKey, bid: StoredBid }>>()
  const claimed = new Set<string>()
  const expire = () => {
    for (const entry of due) {
      const [at, screenId, tag, seatId] = entry
      const what = share.expiry(screenId)
      if (what === 'later') continue
      if (!claimed.has(screenId)) {
        if (deps.claims.take(screenId) === 'other') continue
        claimed.add(screenId)
        store.afterEnd(() => deps.claims.release(screenId))
      }
      const key = bookKey(screenId, tag, seatId)
      // Entries outlive the bids an auction settled (settle.ts applySettlements): an entry whose bid is gone, or was
      // replaced by a later one, only goes.
      store.bidExpiry.removeSync(entry)
      const bid = store.bids.get(key)
      if (bid === undefined || bid.expires_at !== at) continue
      if (what === 'drop') {
        share.ownCopy(store, () => store.bids.removeSync(key))
        continue
      }
      let screenBids = settling.get(screenId)
      if (screenBids === undefined) settling.set(screenId, screenBids = [])
      screenBids.push({ key, bid })
    }
    // A screen's expired bids are one settlement: on a cluster node, one command in its partition's log.
    const settlements = [...settling].map(([screenId, bids]) => {
      const settlement = lossSettlement(store, bids, store.screens.get(screenId), LOSS.expired, now)
      if (share.settlements !== undefined) settlement.key = `exp_${randomUUID()}`
      return { settlement, at: now, check: false }
    })
    if (settlements.length > 0) applySettlements(deps, settlements)
  }
  store.write(expire)
  let expired = 0
  for (const bids of settling.values()) expired += bids.length
  return expired
}
