import type { SettleCommand } from '../bidding/records.js'
import type { ProofCommand, ProofVerdict } from '../proof/records.js'
import type { Bookings, SettlementFence, Share, Store } from '../store/store.js'
import type { ServedPartitions } from './served-partitions.js'
import { partitionOf } from './screen-partitions.js'

/**
 * How long past its imp's expiry a cluster node waits before it settles a bid itself: the node deciding the bid's
 * screen may have taken it just before, and its settlement must reach this node first. A decision answers once the
 * engine holds its settlement, so it arrives within the engine's acknowledgement timeout, elections included.
 */
export const CLUSTER_EXPIRY_GRACE_MS = 30_000

/**
 * How long a settlement's verdict is kept for the request that decided it, once known: that request asks as soon as
 * its turn has committed, well within this.
 */
const VERDICT_KEPT_MS = 120_000

/** A thread asks again for a campaign's next budget part after this long without a grant. */
const ASK_AGAIN_MS = 1000

/**
 * A cluster node's side of the domain's seam (Share, src/store/store.ts). A node holds the bids of the partitions it
 * owns (and those it took). The node serving a bid's screen settles it once expired, its removal shipped like a spot's
 * settlement, so the book stream never brings it back; any other node drops its copy silently. A node spends its grants of a budget
 * (src/cluster/budget-grants.ts), not the budget left over every node: other nodes' unspent grants are theirs.
 */
export function clusterShare (node: string, served: ServedPartitions, budgets: {
  /** What this node's leases of the campaign's budget hold beyond its spend (src/campaigns/delivery.ts leasedLeft). */
  leasedLeft: (store: Store, campaignId: string) => number
  /** Where this thread's asks for the next part go (its supervisor). */
  ask: (campaignId: string, wantMicros: number) => void
}, links: {
  bookings?: Bookings
  /** Where its settlements of bids are proposed (the screen's partition's log, by the supervisor). */
  settle?: (partition: number, command: SettleCommand) => Promise<boolean>
  /** Where its plays are proposed for their proofs' places (the proof log, by the supervisor). */
  prove?: (plays: ProofCommand[]) => Promise<ProofVerdict[] | undefined>
} = {}): Share {
  const { bookings, settle, prove } = links
  const asked = new Map<string, number>()
  return {
    expiryGraceMs: CLUSTER_EXPIRY_GRACE_MS,
    expiry: (screenId) => served.expiry(screenId),
    node,
    ownCopy: (store, write) => store.changes !== undefined ? store.changes.applying(write) : write(),
    milestonesWithPlay: false,
    bookings,
    settlements: settle !== undefined ? settlementFence(settle, served.partitions) : undefined,
    proofs: prove,
    budgetLeft (store, campaignId, reservedMicros, partMicros, owed, now) {
      const left = budgets.leasedLeft(store, campaignId) - reservedMicros
      if (owed && left < partMicros / 2) {
        const last = asked.get(campaignId)
        if (last === undefined || now - last > ASK_AGAIN_MS) {
          asked.set(campaignId, now)
          budgets.ask(campaignId, partMicros)
        }
      }
      return left
    }
  }
}

/**
 * Settlements proposed through `settle` (to the screen's partition's log, by the supervisor), each verdict kept under
 * its key for the request that decided it. A proposal no request asks for (an expiry's, or one whose request ended)
 * is dropped once its verdict is that old.
 */
function settlementFence (settle: (partition: number, command: SettleCommand) => Promise<boolean>, partitions: number): SettlementFence {
  const proposed = new Map<string, Promise<boolean>>()
  return {
    partition: (screenId) => partitionOf(screenId, partitions),
    propose (partition, command) {
      const verdict = settle(partition, command).catch(() => false)
      proposed.set(command.key, verdict)
      void verdict.then(() => setTimeout(() => proposed.delete(command.key), VERDICT_KEPT_MS).unref())
      return verdict
    },
    verdict (key) {
      const verdict = proposed.get(key)
      proposed.delete(key)
      return verdict ?? Promise.resolve(false)
    }
  }
}
