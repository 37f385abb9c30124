import type { Store } from '../store/store.js'

// Kept apart from the applier that writes it: /readyz reads it on every node, and a hot thread that imported the
// applier would load the engine's client (nats) with it, a quarter of a second of each thread's start.

/** meta key: the state bucket's last revision this node applied, where it resumes after a restart. */
export const APPLIED = 'cluster:applied'

/** The state bucket's revision this node has applied through (/readyz shows it). */
export function appliedRevision (store: Pick<Store, 'meta'>): number {
  return (store.meta.get(APPLIED) as number | undefined) ?? 0
}
