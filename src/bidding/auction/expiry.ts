import type { Store } from '../../store/store.js'
import { settleLoss, type SettleDeps } from './settle.js'
import { LOSS } from '../loss-codes.js'

/**
 * Settles stored bids whose imp expired before any auction on their screen took them: each gets its lurl with
 * ${AUCTION_LOSS} 2 (impression opportunity expired) and the legacy bid.lost. Runs with the other clock-driven jobs;
 * a batch per pass keeps one pass short.
 */
export function expireBids (deps: SettleDeps, now: number, batch = 5000): number {
  const store: Store = deps.store
  const due = [...store.bidExpiry.getKeys({ end: [now, '\uffff'], limit: batch } as never)] as unknown as Array<[number, string, string, string]>
  if (due.length === 0) return 0
  let expired = 0
  store.write(() => {
    for (const [at, screenId, impid, seatId] of due) {
      const key: [string, string, string] = [screenId, impid, seatId]
      // Entries outlive the bids an auction settled (settle.ts consume): an entry whose bid is gone, or was replaced by
      // a later one, only goes.
      store.bidExpiry.removeSync([at, screenId, impid, seatId])
      const bid = store.bids.get(key)
      if (bid === undefined || bid.expires_at !== at) continue
      settleLoss(deps, store.screens.get(screenId), { candidate: { key, bid }, code: LOSS.expired }, undefined, now)
      expired++
    }
  })
  return expired
}
