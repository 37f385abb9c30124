import type { KV } from 'nats'
import type { Logger } from '../log.js'
import { createHold, newestHold, releaseHold } from './numbered-keys.js'
import { retryFor } from './retry.js'

/** How often a request waiting for a record's lock looks again. */
const POLL_MS = 50

/**
 * Records locked cluster-wide while a request rewrites them (RouteDef.exclusive), in the engine's locks bucket, as
 * numbered holds (src/cluster/numbered-keys.ts). The bucket's TTL (30 s) frees the lock of a node that died holding it.
 */
export class RecordLocks {
  readonly #locks: KV
  readonly #log: Logger

  constructor (locks: KV, log: Logger) {
    this.#locks = locks
    this.#log = log
  }

  /**
   * Takes the record's next lock for owner, waiting while another holds it: its number, or false past timeoutMs. An
   * engine that cannot answer (the locks stream electing its leader) is waited out the same way, as a write waits for
   * its quorum; it throws only past timeoutMs.
   */
  async lock (name: string, owner: string, timeoutMs: number): Promise<number | false> {
    const base = lockBase(name)
    const deadline = Date.now() + timeoutMs
    return await retryFor(() => this.#take(base, owner, deadline), timeoutMs, POLL_MS)
  }

  async #take (base: string, owner: string, deadline: number): Promise<number | false> {
    for (;;) {
      const newest = await newestHold(this.#locks, base)
      // Its own hold, created by an earlier try whose answer was lost.
      if (newest !== undefined && !newest.released && newest.value === owner) return newest.n
      if (newest === undefined || newest.released) {
        const n = newest === undefined ? 0 : newest.n + 1
        if (await createHold(this.#locks, base, n, new TextEncoder().encode(owner))) return n
        // Another request took lock n first: look again.
        continue
      }
      if (Date.now() + POLL_MS >= deadline) return false
      await new Promise((resolve) => setTimeout(resolve, POLL_MS))
    }
  }

  /** Gives lock n of the record back. */
  unlock (name: string, n: number): void {
    releaseHold(this.#locks, lockBase(name), n).catch((err: unknown) => {
      this.#log.warn('cluster: a record lock was not given back; it lapses by itself', { error: err instanceof Error ? err.message : String(err) })
    })
  }
}

/** A record's locks' key prefix: letters, digits and `-_=.` only, as KV keys allow. */
function lockBase (name: string): string {
  return `lock.${Buffer.from(name).toString('base64url')}`
}
