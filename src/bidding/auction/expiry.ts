import type { Store } from '../../store/store.js'
import type { ScreenClaims } from './claims.js'
import { lossNotices, type SettleDeps } from './settle.js'
import { LOSS } from '../loss-codes.js'
import { bookKey } from '../book.js'
import type { ExpiryKey } from '../records.js'

/**
 * Settles stored bids whose imp expired before any auction on their screen took them: each gets its lurl with
 * ${AUCTION_LOSS} 2 (impression opportunity expired) and the legacy bid.lost. Runs with the other clock-driven jobs;
 * a batch per pass keeps one pass short. A screen a hot thread is deciding (claims) is left to the next pass: that
 * decision may have taken the bid just before its imp expired, and its writes are not applied yet.
 *
 * How long a bid waits past its expiry, and which node settles it (its notices, and its removal news to the other
 * nodes) are the node's share of the market to say (Store.share.expiry). A node down when its bids expire settles
 * them when it is back, if it still decides their screens.
 */
export function expireBids (deps: SettleDeps & { claims: ScreenClaims }, now: number, batch = 5000): number {
  const store: Store = deps.store
  const share = store.share
  const until = now - share.expiryGraceMs
  const due = [...store.bidExpiry.getKeys({ end: [until, '\uffff'], limit: batch } as never)] as unknown as ExpiryKey[]
  if (due.length === 0) return 0
  let expired = 0
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
      store.bids.removeSync(key)
      lossNotices(deps, bid, store.screens.get(screenId), LOSS.expired, undefined, undefined, now)
      expired++
    }
  }
  store.write(expire)
  return expired
}
