import { prefixSlice } from '../../cluster/checkpoints.js'
import type { AppliedAt, PartitionMachine } from '../../cluster/partition-log.js'
import type { Notices } from '../../notify/notices.js'
import type { Store } from '../../store/store.js'
import { bookKeyOf, expiryKeyOf } from '../book.js'
import type { BookKey, PendingSettlement, SettleCommand, SettledBid } from '../records.js'

// A cluster node's settlements of bids, fenced by their partition's log (docs/architecture.md, "Settlements fenced by
// the partition's log"). The node serving a screen decides its spots from its copy of the book and takes what it
// settled out of that copy only, keeping it aside (pending_settlements) with the notices it holds; its decision counts
// once the screen's partition's log accepts the settlement, which it does only from the partition's owner under the
// epoch in force where the entry lands, and only if no earlier accepted settlement took one of its bids. Every node
// applies the log alike: the bids leave every copy and are remembered, so that the book stream never brings them
// back, and the deciding node queues the notices it held; refused, it drops them and puts the bids back.

/** Settlements forgotten by one apply at least, oldest first: the upkeep keeps up with what the entries add. */
const TRIM_BATCH = 64

/** How long the book stream keeps a bid, for a command from a node that did not say (keep_ms). */
const DEFAULT_KEEP_MS = (300 + 600) * 1000

/**
 * How long past its decision, in its log's time, a pending settlement whose verdict this node never applied is
 * decided from the log's rows: far past the 30 s in which its command can land, and past any difference between this
 * node's clock (which dated the decision) and the log's that a node is expected to have.
 */
export const PENDING_RESOLVED_AFTER_MS = 30 * 60_000

export const isSettleCommand = (body: unknown): body is SettleCommand => (body as { op?: unknown } | null)?.op === 'settle_bids'

const tombstoneKey = (partition: number, [received, screen, tag, seat]: SettledBid): [number, number, string, string, string] => [partition, received, screen, tag, seat]

/**
 * Keeps a settlement aside until its log decides it (call inside Store.write, with its removal from this node's copy
 * and its held notices): what it took out of this node's copy, to put back if it is refused.
 */
export function pendSettlement (store: Store, key: string, pending: PendingSettlement): void {
  store.pendingSettlements.putSync(key, pending)
}

/**
 * Bids' settlements as one partition's log applies them, on every node that follows it. `node`: this node
 * (CLUSTER_NODE_ID), whose own settlements' verdicts release or drop what it set aside, in any life of its process.
 */
export function settlementMachine (store: Store, notices: Notices, options: { node: string, partition: number }): Pick<Required<PartitionMachine>, 'apply' | 'refused' | 'tables'> {
  const { node, partition } = options
  const mine = (at: AppliedAt): boolean => at.from.node === node
  return {
    tables: [prefixSlice('settled_bids', store.settledBids, partition)],
    apply (body, at) {
      const c = body as SettleCommand
      forget(store, partition, at.logTime - (c.keep_ms ?? DEFAULT_KEEP_MS), Math.max(TRIM_BATCH, 2 * c.bids.length))
      // Taken already: a decision from a book that had not yet applied that settlement's removal. Exclusivity is
      // the log's order, not the book's freshness.
      if (c.bids.length === 0 || c.bids.some((b) => store.settledBids.get(tombstoneKey(partition, b)) !== undefined)) {
        if (mine(at)) refusedHere(store, notices, c.key)
        return { status: 'refused', reason: c.bids.length === 0 ? 'empty' : 'settled' }
      }
      for (const b of c.bids) {
        const [received, screen, tag, seat, bidId] = b
        store.settledBids.putSync(tombstoneKey(partition, b), [bidId, c.key])
        const key: BookKey = [screen, tag, seat]
        const bid = store.bids.get(key)
        if (bid !== undefined && bid.received_at === received && bid.bid_id === bidId) store.share.ownCopy(store, () => store.bids.removeSync(key))
      }
      if (mine(at)) acceptedHere(store, notices, c.key)
      return { status: 'accepted' }
    },
    refused (body, at) {
      if (mine(at)) refusedHere(store, notices, (body as SettleCommand).key)
    }
  }
}

/** This node's settlement counts: its notices are queued. */
function acceptedHere (store: Store, notices: Notices, key: string): void {
  notices.release(key)
  store.pendingSettlements.removeSync(key)
}

/**
 * This node's settlement does not count: its notices go, and the bids it took out of this node's copy come back,
 * but for those another settlement took since or whose place in the book a newer bid has taken.
 */
function refusedHere (store: Store, notices: Notices, key: string): void {
  notices.drop(key)
  const pending = store.pendingSettlements.get(key)
  if (pending === undefined) return
  store.pendingSettlements.removeSync(key)
  for (const bid of pending.bids) {
    const bookKey = bookKeyOf(bid)
    if (store.settledBids.get(tombstoneKey(pending.partition, [bid.received_at, ...bookKey, bid.bid_id])) !== undefined) continue
    if (store.bids.get(bookKey) !== undefined) continue
    store.share.ownCopy(store, () => store.bids.putSync(bookKey, bid))
    store.bidExpiry.putSync(expiryKeyOf(bid), 1)
  }
}

/**
 * Decides, from the log's rows, this node's settlements whose verdict it never applied (its node died between the
 * decision and the proposal, or the log was read on from a checkpoint past the entry): once their log's time is
 * PENDING_RESOLVED_AFTER_MS past the decision, one whose bids the log remembers under its key counted, any other did
 * not. logTime: how far this node has applied a partition's log, in its time.
 */
export function resolvePending (store: Store, notices: Notices, logTime: (partition: number) => number): void {
  const due = [...store.pendingSettlements.getRange()].filter(({ value }) => logTime(value.partition) > value.at + PENDING_RESOLVED_AFTER_MS)
  if (due.length === 0) return
  store.write(() => {
    for (const { key, value } of due) {
      if (store.pendingSettlements.get(key) === undefined) continue
      const first = value.taken[0]
      const counted = first !== undefined && store.settledBids.get(tombstoneKey(value.partition, first))?.[1] === key
      if (counted) acceptedHere(store, notices, key as string)
      else refusedHere(store, notices, key as string)
    }
  })
}

/** Forgets, at most `limit` at a time, this partition's settlements of bids received before `before`: the book stream no longer holds them. */
function forget (store: Store, partition: number, before: number, limit: number): void {
  for (const key of store.settledBids.getKeys({ start: [partition], end: [partition, before], limit } as never)) store.settledBids.removeSync(key)
}
