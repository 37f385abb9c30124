import type { Store } from '../store/store.js'
import { appliedRevision } from './applied-revision.js'

/**
 * What a cluster node's /readyz adds (checks.cluster): how many of its transactions wait to ship to the engine, and
 * through which revision it has applied the replicated state. A node stays ready while the engine is away (it serves
 * bids and reads); this says how far behind it is.
 */
export function replicationChecks (nodeId: string, store: Store): () => Record<string, string> {
  return (): Record<string, string> => store.changes === undefined
    ? {}
    : { cluster: `${nodeId}: ${store.changes.waiting} transactions waiting to ship to the engine; replicated state applied through revision ${appliedRevision(store)}` }
}
