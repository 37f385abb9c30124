import { KvWatchInclude, type KV } from 'nats'
import type { Logger } from '../log.js'
import { createHold, newestHold, releaseHold } from './numbered-keys.js'
import { LOCK_TTL_MS } from './engine.js'
import { retryFor } from '../retry.js'

/** How often a request that cannot reach the engine tries again. */
const POLL_MS = 50

/**
 * How long a waiting request waits for word of the hold it waits for before reading it again: a hold that lapses
 * with the TTL sends no word, and a watch being opened again can miss some.
 */
const LOOK_AGAIN_MS = 250

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
  /** Requests waiting for a hold to be given back, by the key that gives it back. */
  readonly #waiting = new Map<string, Set<() => void>>()
  #watch: Awaited<ReturnType<KV['watch']>> | undefined
  #stopped = false

  constructor (locks: KV, log: Logger) {
    this.#locks = locks
    this.#log = log
    void this.#follow()
  }

  /**
   * Watches the bucket for holds given back, each waking the requests waiting for it: a waiting request learns of
   * its turn from the engine rather than by reading the hold again and again (a poll every 50 ms put that much on the
   * p99 of every booking queued behind another).
   */
  async #follow (): Promise<void> {
    while (!this.#stopped) {
      try {
        const watch = this.#watch = await this.#locks.watch({ include: KvWatchInclude.UpdatesOnly })
        for await (const entry of watch) this.#waiting.get(entry.key)?.forEach((wake) => wake())
      } catch (err) {
        if (!this.#stopped) this.#log.warn('cluster: the locks watch ended; waiting requests read their holds until it is back', { error: err instanceof Error ? err.message : String(err) })
      }
      if (!this.#stopped) await new Promise((resolve) => setTimeout(resolve, 500))
    }
  }

  stop (): void {
    this.#stopped = true
    this.#watch?.stop()
  }

  /** Resolves when the key is written (a hold given back) or after ms; cancel() before it does stops listening. */
  #wakeOn (key: string, ms: number): { woken: Promise<void>, cancel: () => void } {
    let wake!: () => void
    const woken = new Promise<void>((resolve) => { wake = resolve })
    const timer = setTimeout(wake, ms)
    let set = this.#waiting.get(key)
    if (set === undefined) this.#waiting.set(key, set = new Set())
    set.add(wake)
    const cancel = () => {
      clearTimeout(timer)
      set!.delete(wake)
      if (set!.size === 0 && this.#waiting.get(key) === set) this.#waiting.delete(key)
    }
    return { woken, cancel }
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
      const left = deadline - Date.now()
      if (left <= 0) return false
      // Listening before reading: a hold given back between the two is not missed. Only the hold waited for is read
      // again, not every hold of the record: a busy record (the catalog) has thousands within the TTL.
      const wait = this.#wakeOn(`${base}.${hold.n}.r`, Math.min(LOOK_AGAIN_MS, left))
      let seen: Hold
      try {
        seen = await this.#hold(base, hold.n)
        if (!seen.released) await wait.woken
      } finally {
        wait.cancel()
      }
      hold = seen.released ? seen : await this.#hold(base, hold.n)
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
