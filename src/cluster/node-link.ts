import { ApiError } from '../errors.js'
import type { NodeLink } from './link.js'
import type { WindowAsk } from '../http/rate-limit.js'
import { MarkWaiters } from './mark-waiters.js'
import type { ShippedChanges } from './shipped.js'

/**
 * How long a node waits for the engine's grant before granting itself one: the engine cannot answer while the
 * bucket's stream elects a leader (4-9 s), and a key's requests must not stop for that long. Long enough that a
 * busy machine's slow answer is not taken for an absent one.
 */
export const LOCAL_GRANT_MS = 2000

/** What a hot thread's link asks of its supervisor, which holds the node's one connection to the engine. */
export interface SupervisorLink {
  claim (name: string, owner: string, takeOverAfterMs?: number): Promise<boolean>
  release (name: string, owner: string): Promise<void>
  /** The lock's number, or false while another holds it. */
  lock (name: string, owner: string): Promise<number | false>
  unlock (name: string, n: number): void
  lease (ask: WindowAsk): void
  caughtUp (): Promise<boolean>
}

/** A hot thread's link, through its supervisor. */
export function nodeLinkThrough (shipped: ShippedChanges, supervisor: SupervisorLink): NodeLink {
  const grants = new MarkWaiters()
  let granted = 0
  return {
    shipped,
    names: {
      claim: (name, owner, takeOverAfterMs) => supervisor.claim(name, owner, takeOverAfterMs).catch(() => {
        throw new ApiError('service_unavailable', 'The cluster cannot confirm that this name is free right now; retry shortly.', { retry_after_seconds: 1 }, { 'Retry-After': '1' })
      }),
      release: async (name, owner) => { await supervisor.release(name, owner).catch(() => {}) }
    },
    locks: {
      lock: async (name, owner) => {
        const held = await supervisor.lock(name, owner).catch(() => undefined)
        if (typeof held === 'number') return held
        throw new ApiError('service_unavailable', held === false ? 'Another request is changing this record right now; retry shortly.' : 'The cluster cannot lock this record right now; retry shortly.', { retry_after_seconds: 1 }, { 'Retry-After': '1' })
      },
      unlock: (name, n) => supervisor.unlock(name, n)
    },
    rates: {
      ask: (ask) => supervisor.lease(ask),
      waitMs: LOCAL_GRANT_MS + 1000,
      granted: (timeoutMs) => grants.wait(granted + 1, timeoutMs),
      woken: () => grants.reached(++granted)
    },
    caughtUp: async () => await supervisor.caughtUp().catch(() => false)
  }
}
