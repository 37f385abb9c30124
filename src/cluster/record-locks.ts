import type { KV } from 'nats'
import type { Logger } from '../log.js'
import { createHold, newestHold, releaseHold } from './numbered-keys.js'
import { LOCK_TTL_MS } from './engine.js'
import { retryFor } from './retry.js'

/** How often a request waiting for a record's lock looks again. */
const POLL_MS = 50

/** A hold as a reader finds it: its number, its holder, and whether it was given back (or lapsed). */
type Hold = NonNullable<Awaited<ReturnType<typeof newestHold>>>

/**
 * Records locked cluster-wide while a request rewrites them (RouteDef.exclusive), in the engine's locks bucket, as
 * numbered holds (src/cluster/numbered-keys.ts). The bucket's TTL (30 s) frees the lock of a node that died holding it.
 */
export class RecordLocks {
  readonly #locks: KV
  readonly #log: Logger
  /** Per record, the newest hold this node knows of and when it knew that it was the newest. */
  readonly #known = new Map<string, { n: number, at: number }>()

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
    let hold = await this.#newest(base)
    // Its own hold, created by an earlier try whose answer was lost.
    if (hold !== undefined && !hold.released && hold.value === owner) return hold.n
    for (;;) {
      if (hold === undefined || hold.released) {
        const n = hold === undefined ? 0 : hold.n + 1
        if (await createHold(this.#locks, base, n, new TextEncoder().encode(owner))) {
          this.#learn(base, n)
          return n
        }
        // Another request took lock n first: wait for it.
        hold = await this.#hold(base, n)
        continue
      }
      if (Date.now() + POLL_MS >= deadline) return false
      await new Promise((resolve) => setTimeout(resolve, POLL_MS))
      // Only the hold waited for is read again, not every hold of the record: a busy record (the catalog) has
      // thousands within the TTL, and a waiting request looks every 50 ms.
      hold = await this.#hold(base, hold.n)
    }
  }

  /**
   * The record's newest hold. Listing every hold costs as many as the TTL keeps, so a node that knew the newest less
   * than half a TTL ago looks only past it, a hold at a time: a hold made since cannot have lapsed, so the first
   * number not found is one nobody has taken.
   */
  async #newest (base: string): Promise<Hold | undefined> {
    const known = this.#known.get(base)
    if (known === undefined || Date.now() - known.at > LOCK_TTL_MS / 2) {
      const newest = await newestHold(this.#locks, base)
      if (newest !== undefined) this.#learn(base, newest.n)
      return newest
    }
    let n = known.n
    while (await this.#locks.get(`${base}.${n + 1}`) !== null) n++
    this.#learn(base, n)
    return await this.#hold(base, n)
  }

  /** Hold n of a record as it stands: given back, or lapsed with the TTL, reads as released. */
  async #hold (base: string, n: number): Promise<Hold> {
    const [entry, given] = await Promise.all([this.#locks.get(`${base}.${n}`), this.#locks.get(`${base}.${n}.r`)])
    const live = entry !== null && entry.operation === 'PUT'
    return { n, value: live ? entry.string() : '', released: !live || given !== null }
  }

  #learn (base: string, n: number): void {
    const now = Date.now()
    if (this.#known.size > 10_000) for (const [name, k] of this.#known) if (now - k.at > LOCK_TTL_MS / 2) this.#known.delete(name)
    this.#known.set(base, { n, at: now })
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
