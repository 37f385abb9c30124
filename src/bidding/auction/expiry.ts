import type { Store } from '../../store/store.js'
import type { ScreenClaims } from './claims.js'
import { lossNotices, type SettleDeps } from './settle.js'
import { LOSS } from '../loss-codes.js'
import { bookKey } from '../book.js'
import type { ExpiryKey } from '../records.js'

/**
 * How long past its imp's expiry a cluster node waits before it settles a bid itself: the node deciding the bid's
 * screen may have taken it just before, and its settlement must reach this node first. A decision answers once the
 * engine holds its settlement, so it arrives within the engine's acknowledgement timeout, elections included.
 */
export const CLUSTER_EXPIRY_GRACE_MS = 30_000

/**
 * Settles stored bids whose imp expired before any auction on their screen took them: each gets its lurl with
 * ${AUCTION_LOSS} 2 (impression opportunity expired) and the legacy bid.lost. Runs with the other clock-driven jobs;
 * a batch per pass keeps one pass short. A screen a hot thread is deciding (claims) is left to the next pass: that
 * decision may have taken the bid just before its imp expired, and its writes are not applied yet.
 *
 * On a cluster node (store.node) every node holds every bid and takes it out of its own book on its own clock, so
 * the removal is not shipped; only the node that took the bid sends its notices, CLUSTER_EXPIRY_GRACE_MS after the
 * expiry. A node down then sends them when it is back.
 */
export function expireBids (deps: SettleDeps & { claims: ScreenClaims }, now: number, batch = 5000): number {
  const store: Store = deps.store
  const node = store.node
  const until = node === '' ? now : now - CLUSTER_EXPIRY_GRACE_MS
  const due = [...store.bidExpiry.getKeys({ end: [until, '\uffff'], limit: batch } as never)] as unknown as ExpiryKey[]
  if (due.length === 0) return 0
  let expired = 0
  const claimed = new Set<string>()
  const expire = () => {
    for (const entry of due) {
      const [at, screenId, tag, seatId] = entry
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
      store.bids.removeSync(key)
      if (node !== '' && bid.node !== undefined && bid.node !== node) continue
      lossNotices(deps, bid, store.screens.get(screenId), LOSS.expired, undefined, undefined, now)
      expired++
    }
  }
  store.write(() => store.changes !== undefined ? store.changes.applying(expire) : expire())
  return expired
}
