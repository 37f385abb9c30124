import type { FunnelEvent } from '../generated/types.js'
import type { FunnelLog } from '../events/funnel.js'
import { registerCreative, type NewCreative } from '../creatives/register.js'
import { updateKey } from '../auth/keys.js'
import type { Notices } from '../notify/notices.js'
import type { Outbox } from '../store/outbox.js'
import type { Store } from '../store/store.js'
import type { Metrics } from '../http/metrics.js'
import type { ScreenClaims } from './auction/claims.js'
import { lossNotices, type NoticeBid } from './auction/settle.js'
import { bookKeyOf, expiryKeyOf } from './book.js'
import { countResponses } from './hour-stats.js'
import type { StoredBid } from './records.js'

/**
 * Everything a bid response changes, decided by POST /bid before any write: the entry the hot thread's journal makes
 * durable (src/hot/journal.ts) and applyIntakes writes. Plain JSON, since the journal keeps it as JSON.
 */
export interface BidIntake {
  seat_id: string
  at: number
  sandbox: boolean
  /** Creatives the markup registers (crids the seat had not registered), to moderate once committed. */
  register: Array<{ creative_id: string, creative: NewCreative }>
  /** Production bids refused at intake: their lurl and legacy bid.lost, like an auction loss. */
  losses: Array<{ bid: NoticeBid, screen_id?: string, code: number, min_to_win?: number }>
  /** Accepted bids of a production seat, for the waterfall. */
  stored: StoredBid[]
  /** Every bid's outcome: the bid_received funnel event's bids, and what the seat's hour of counters adds up. */
  bids: NonNullable<FunnelEvent['bids']>
  /** The key's sealed copy, on its first production bid (legacy notifications are signed with it). */
  seal?: { key_id: string, sealed: string }
}

/** What applying an intake writes to. */
export interface IntakeDeps {
  store: Store
  outbox: Outbox
  notices: Notices
  funnel: FunnelLog
  /** Where a registered creative goes for moderation, once committed. */
  moderator: { schedule (creativeId: string): void }
  metrics: Metrics
  /** The screens being decided: a stored bid may replace one a pending decision took (ScreenClaims.mark). */
  claims: Pick<ScreenClaims, 'mark' | 'intakeBegins' | 'intakeEnds'>
}

/**
 * Writes bid responses' changes, in order; call inside Store.write (the hot thread's journal applies a turn's entries
 * in one). A seat's hour of counters is written once for the batch.
 */
export function applyIntakes (deps: IntakeDeps, intakes: readonly BidIntake[]): void {
  const { store, claims } = deps
  let accepted = 0
  let rejected = 0
  claims.intakeBegins()
  store.afterEnd(() => claims.intakeEnds())
  for (const intake of intakes) {
    for (const { creative_id: id, creative } of intake.register) {
      // Decided outside the lock: another bid of this turn, or another thread, may have registered it since.
      if (store.creatives.get(id) !== undefined) continue
      registerCreative(deps, intake.seat_id, creative, intake.at, id)
      store.afterCommit(() => deps.moderator.schedule(id))
    }
    for (const loss of intake.losses) {
      lossNotices(deps, loss.bid, loss.screen_id !== undefined ? store.screens.get(loss.screen_id) : undefined, loss.code, loss.min_to_win, undefined, intake.at)
    }
    for (const bid of intake.stored) {
      store.bids.putSync(bookKeyOf(bid), bid)
      claims.mark(bid.screen_id)
      store.bidExpiry.putSync(expiryKeyOf(bid), 1)
    }
    deps.funnel.append({ stage: 'bid_received', at: intake.at, seat_id: intake.seat_id, sandbox: intake.sandbox, screens: [], bids: intake.bids })
    if (intake.seal !== undefined) {
      const key = store.keys.get(intake.seal.key_id)
      if (key !== undefined && key.sealed === undefined) updateKey(store, key, { sealed: intake.seal.sealed })
    }
    for (const bid of intake.bids) {
      if (bid.status === 'accepted') accepted++
      else rejected++
    }
  }
  countResponses(store, intakes)
  store.afterCommit(() => {
    deps.metrics.inc('oohbid_bids_total', 'Bids received on POST /openrtb/v2/bid, by outcome.', 'status="accepted"', accepted)
    deps.metrics.inc('oohbid_bids_total', 'Bids received on POST /openrtb/v2/bid, by outcome.', 'status="rejected"', rejected)
  })
}
