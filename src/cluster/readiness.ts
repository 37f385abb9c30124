import type { Store } from '../store/store.js'
import { appliedRevision } from './applied-revision.js'
import type { ServedPartitions } from './served-partitions.js'

/** meta key: a log this node stopped following, and why (src/cluster/node.ts). */
export const LOG_STOPPED = 'cluster:log_stopped'

/**
 * What a cluster node's /readyz adds (checks.cluster): how many of its transactions wait to ship to the engine, and
 * through which revision it has applied the replicated state; and (checks.logs) which logs it owns, under which
 * epoch, and (checks.spots) which partitions of the screens it decides the spots of, having read their bids (the
 * other partitions' players it forwards to their owners). A node stays ready while the engine is away (it serves bids and reads); this says how far behind it is.
 * It is not ready once it stopped following one of the logs its bookings are decided in (what it would answer of them
 * is no longer the cluster's). A partition whose bids it is still reading is not served (checks.spots): its players
 * are answered 503 meanwhile, and the others' served.
 */
export function replicationChecks (nodeId: string, store: Store, served: ServedPartitions): () => { checks: Record<string, string>, unready?: string } {
  return (): { checks: Record<string, string>, unready?: string } => {
    if (store.changes === undefined) return { checks: {} }
    const stopped = store.meta.get(LOG_STOPPED) as string | undefined
    return {
      checks: {
        cluster: `${nodeId}: ${store.changes.waiting} transactions waiting to ship to the engine; replicated state applied through revision ${appliedRevision(store)}`,
        logs: ownedLogs(nodeId, store),
        spots: servedPartitions(nodeId, served)
      },
      ...(stopped !== undefined ? { unready: `${nodeId} stopped following a log (${stopped}); restart it to rebuild` } : {})
    }
  }
}

/**
 * Which of the logs this node follows it owns (src/cluster/partition-owners.ts), each with its epoch, and which no
 * node has owned yet (a log without owners, the proofs', is always among them).
 */
function ownedLogs (nodeId: string, store: Store): string {
  let total = 0
  const owned: string[] = []
  const never: string[] = []
  for (const { key, value } of store.partitionMarks.getRange()) {
    total++
    if (value.owner?.node === nodeId) owned.push(`${key as string}@${value.epoch}`)
    else if (value.epoch === 0) never.push(key as string)
  }
  return `${nodeId} owns ${owned.length} of the ${total} logs it follows${owned.length > 0 ? `: ${owned.join(', ')}` : ''}${never.length > 0 ? `; ${never.length} never owned: ${never.join(', ')}` : ''}`
}

/** The partitions of the screens whose spots this node decides now. */
function servedPartitions (nodeId: string, served: ServedPartitions): string {
  const partitions = Array.from({ length: served.partitions }, (_, p) => p).filter((p) => served.serves(p))
  return `${nodeId} decides the spots of ${partitions.length} of the ${served.partitions} partitions${partitions.length > 0 ? `: ${partitions.join(', ')}` : ''}`
}
