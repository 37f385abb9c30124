import { ApiError } from '../errors.js'
import type { ShippedChanges } from './shipped.js'
import type { UniqueNames } from './unique-names.js'

/** What a cluster node's requests need of the cluster, reached from a hot thread through its supervisor. */
export interface NodeLink {
  /** How far this node's changes are held by the engine: a write answers once its are. */
  shipped: ShippedChanges
  /** Names claimed across the cluster before a route's write makes them (RouteDef.unique). */
  names: UniqueNames
  /** Resolves once this node has applied every change the engine held when it was called (or after a second). */
  caughtUp (): Promise<void>
}

/** A hot thread's link: the supervisor holds the node's one connection to the engine and answers these calls. */
export function nodeLinkThrough (shipped: ShippedChanges, call: (op: string, ...args: unknown[]) => Promise<unknown>, notify: (op: string, ...args: unknown[]) => void): NodeLink {
  return {
    shipped,
    names: {
      claim: (name, owner) => (call('claim', name, owner) as Promise<boolean>).catch(() => {
        throw new ApiError('service_unavailable', 'The cluster cannot confirm that this name is free right now; retry shortly.', { retry_after_seconds: 1 }, { 'Retry-After': '1' })
      }),
      release: (name) => notify('release', name)
    },
    caughtUp: async () => { await call('caughtUp') }
  }
}
