import { tableSlice } from '../../cluster/checkpoints.js'
import type { AppliedAt, PartitionMachine } from '../../cluster/partition-log.js'
import { partitionOf } from '../../cluster/screen-partitions.js'
import type { Notices } from '../../notify/notices.js'
import type { Store } from '../../store/store.js'
import type { BookKey, SettleCommand, StoredBid } from '../records.js'

// A cluster node's settlements of bids, fenced by their partition's log (docs/architecture.md, "Spots fenced by the
// partition's log"). The node serving a screen decides its spots from its copy of the book and removes what it took
// from that copy only; its decision counts once the screen's partition's log accepts the settlement, which it does
// only from the partition's owner under the epoch in force where the entry lands, and only if no earlier accepted
// settlement took one of its bids. Every node applies the log alike: the bids leave every copy, are remembered so that
// the book stream never brings them back, and the deciding node queues the notices it held.

/** Settlements removed by one apply at most, oldest first: the upkeep stays small beside the entries. */
const TRIM_BATCH = 64

export const isSettleCommand = (body: unknown): body is SettleCommand => (body as { op?: unknown } | null)?.op === 'settle_bids'

/** Whether a settlement its partition's log accepted took this bid: the book does not take it back. */
export function settledInLog (store: Store, partitions: number, key: BookKey, bid: Pick<StoredBid, 'received_at' | 'bid_id'>): boolean {
  return store.settledBids.get([partitionOf(key[0], partitions), bid.received_at, ...key]) === bid.bid_id
}

/**
 * Bids' settlements as one partition's log applies them, on every node that follows it. `node`: this node
 * (CLUSTER_NODE_ID), whose held notices a settlement it proposed releases, in any life of its process. `keepMs`: how
 * long after its receipt a bid may still come in the book stream (its retention), past which its settlement is
 * forgotten.
 */
export function settlementMachine (store: Store, notices: Notices, options: { node: string, partition: number, keepMs: number }): Pick<Required<PartitionMachine>, 'apply' | 'refused' | 'tables'> {
  const { node, partition, keepMs } = options
  const mine = (at: AppliedAt): boolean => at.from.node === node
  return {
    tables: [tableSlice('settled_bids', store.settledBids, ([p]) => p === partition)],
    apply (body, at) {
      const c = body as SettleCommand
      forget(store, partition, at.logTime - keepMs)
      // Taken already: a decision from a book that had not yet applied that settlement's removal. Exclusivity is
      // the log's order, not the book's freshness.
      if (c.bids.some(([received, screen, tag, seat, bidId]) => store.settledBids.get([partition, received, screen, tag, seat]) === bidId)) {
        if (mine(at)) notices.drop(c.key)
        return { status: 'refused', reason: 'settled' }
      }
      for (const [received, screen, tag, seat, bidId] of c.bids) {
        store.settledBids.putSync([partition, received, screen, tag, seat], bidId)
        const key: BookKey = [screen, tag, seat]
        const bid = store.bids.get(key)
        if (bid !== undefined && bid.received_at === received && bid.bid_id === bidId) store.share.ownCopy(store, () => store.bids.removeSync(key))
      }
      if (mine(at)) notices.release(c.key)
      return { status: 'accepted' }
    },
    refused (body, at) {
      if (mine(at)) notices.drop((body as SettleCommand).key)
    }
  }
}

/** Forgets this partition's settlements of bids received before `before`: the book stream no longer holds them. */
function forget (store: Store, partition: number, before: number): void {
  for (const key of store.settledBids.getKeys({ start: [partition], end: [partition, before], limit: TRIM_BATCH } as never)) store.settledBids.removeSync(key)
}
