import type { Database, RangeOptions } from 'lmdb'

/**
 * A table whose decoded values are kept in memory after a read. Writes drop the entry instead of caching the new
 * value, so a transaction that rolls back (a dry run, a failed request) can never leave a value in the cache that is
 * not in LMDB: the next read fetches the committed one. (lmdb-js's own `cache` option keeps an aborted object value.)
 *
 * Every hot thread has its own copy of the cache over the one environment. A commit that wrote the table moves its
 * generation, a counter in memory shared by the threads; a thread that finds the generation moved by someone else
 * drops its copy. The bump comes after the commit, so a thread that read the old value between the two sees the bump
 * on its next read. (The analytics process writes none of these tables.)
 */
export class CachedTable<V> {
  readonly #db: Database<V, string>
  readonly #max: number
  readonly #values = new Map<string, V>()
  readonly #generations: Int32Array
  readonly #slot: number
  readonly #afterCommit: (fn: () => void) => void
  /** The shared generation this copy reflects. */
  #seen: number
  /** This thread's writes, committed or not: memory derived inside a transaction must change with them at once. */
  #local = 0

  /** generations[slot]: this table's shared generation; afterCommit: the store's (bumps follow the commit). */
  constructor (db: Database<V, string>, generations: Int32Array, slot: number, afterCommit: (fn: () => void) => void, max = 250_000) {
    this.#db = db
    this.#max = max
    this.#generations = generations
    this.#slot = slot
    this.#afterCommit = afterCommit
    this.#seen = Atomics.load(generations, slot)
  }

  /** Moves on every write in any thread, so that whatever is derived from the whole table knows when to derive again. */
  get version (): number {
    return Atomics.load(this.#generations, this.#slot) + this.#local
  }

  get (key: string): V | undefined {
    const generation = Atomics.load(this.#generations, this.#slot)
    if (generation !== this.#seen) {
      this.#values.clear()
      this.#seen = generation
    }
    const hit = this.#values.get(key)
    if (hit !== undefined) return hit
    const value = this.#db.get(key)
    if (value === undefined) return undefined
    if (this.#values.size >= this.#max) {
      // Drop the oldest tenth: insertion order approximates age well enough for a bounded read cache.
      let n = Math.ceil(this.#max / 10)
      for (const k of this.#values.keys()) { this.#values.delete(k); if (--n === 0) break }
    }
    this.#values.set(key, value)
    return value
  }

  /** Reads LMDB itself, bypassing the cache: for another process sharing the environment, whose writes this cache cannot see. */
  fresh (key: string): V | undefined {
    return this.#db.get(key)
  }

  putSync (key: string, value: V): void {
    this.#wrote(key)
    this.#db.putSync(key, value)
  }

  removeSync (key: string): void {
    this.#wrote(key)
    this.#db.removeSync(key)
  }

  #wrote (key: string): void {
    this.#local++
    this.#values.delete(key)
    this.#afterCommit(() => {
      // Our own bump keeps our copy, unless another thread's landed since we last looked.
      if (Atomics.add(this.#generations, this.#slot, 1) === this.#seen) this.#seen++
    })
  }

  getRange (options?: RangeOptions): ReturnType<Database<V, string>['getRange']> {
    return this.#db.getRange(options)
  }

  getCount (): number {
    return this.#db.getCount()
  }
}
