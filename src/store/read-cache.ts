import type { Database, RangeOptions } from 'lmdb'

/** What a CachedTable needs from its store. */
export interface CacheScope {
  /** One generation per cached table, in memory shared by the hot threads. */
  readonly generations: Int32Array
  /**
   * Whether a value of table `slot` read now may be filed under `generation`: whether the view it was read from holds
   * every commit that generation counts, and none of a transaction's writes that may still roll back.
   */
  keeps (slot: number, generation: number): boolean
  /**
   * Whether a copy filed under `generation` may serve the current read: always for a read snapshot (the copy was kept
   * only from a view as new as the generation), and for a write transaction only when no commit of the table has
   * landed without moving the generation yet.
   */
  current (slot: number, generation: number): boolean
  /**
   * Writes table `slot` with put, moving the table's `begun` generation before the write can land (inside the
   * current transaction, or at once outside one); settle runs once it has landed (after the commit).
   */
  write (slot: number, put: () => void, settle: () => void): void
}

/**
 * A table whose decoded values are kept in memory after a read. Writes drop the entry instead of caching the new
 * value, and a value read inside the transaction that wrote the table is not kept, so a transaction that rolls back
 * (a dry run, a failed request) can never leave a value in the cache that is not in LMDB. (lmdb-js's own `cache`
 * option keeps an aborted object value.)
 *
 * Every hot thread has its own copy of the cache over the one environment. A commit that wrote the table moves its
 * generation, a counter in memory shared by the threads; a thread that finds the generation moved by someone else
 * drops its copy. A read snapshot taken before that commit still holds the old value, so a value is kept only when
 * the scope says its snapshot is as new as the generation: otherwise it serves that one read and is fetched again.
 * A write transaction reads the newest commits instead, so a copy serves it only while no commit has landed that has
 * not moved the generation yet (the scope's `current`). (The analytics process writes none of these tables.)
 */
export class CachedTable<V> {
  readonly #db: Database<V, string>
  readonly #max: number
  readonly #values = new Map<string, V>()
  readonly #generations: Int32Array
  readonly #slot: number
  readonly #scope: CacheScope
  /** The shared generation this copy reflects. */
  #seen: number

  /** scope.generations[slot]: this table's shared generation. */
  constructor (db: Database<V, string>, slot: number, scope: CacheScope, max = 250_000) {
    this.#db = db
    this.#max = max
    this.#generations = scope.generations
    this.#slot = slot
    this.#scope = scope
    this.#seen = Atomics.load(this.#generations, slot)
  }

  /**
   * Moves on every commit that wrote the table, in any thread, so that whatever is derived from the whole table knows
   * when to derive again. Undefined while what this thread reads may differ from what it counts: a read snapshot older
   * than its last move, a transaction that wrote the table (its writes may roll back), or another thread's commit that
   * has landed without moving it yet. Memory derived then serves that one use and is not kept: kept under the version,
   * it would outlive the change it missed until the next write of the table.
   */
  get version (): number | undefined {
    const generation = Atomics.load(this.#generations, this.#slot)
    return this.#scope.keeps(this.#slot, generation) && this.#scope.current(this.#slot, generation) ? generation : undefined
  }

  get (key: string): V | undefined {
    const generation = Atomics.load(this.#generations, this.#slot)
    if (generation !== this.#seen) {
      this.#values.clear()
      this.#seen = generation
    }
    const hit = this.#values.get(key)
    if (hit !== undefined && this.#scope.current(this.#slot, generation)) return hit
    const value = this.#db.get(key)
    if (value === undefined || !this.#scope.keeps(this.#slot, generation)) return value
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
    this.#write(key, () => this.#db.putSync(key, value))
  }

  removeSync (key: string): void {
    this.#write(key, () => this.#db.removeSync(key))
  }

  #write (key: string, put: () => void): void {
    this.#values.delete(key)
    this.#scope.write(this.#slot, put, () => {
      // Our own bump keeps our copy, unless another thread's landed since we last looked.
      if (Atomics.add(this.#generations, this.#slot, 1) === this.#seen) this.#seen++
    })
  }

  getRange (options?: RangeOptions): ReturnType<Database<V, string>['getRange']> {
    return this.#db.getRange(options)
  }

  getKeys (options?: RangeOptions): ReturnType<Database<V, string>['getKeys']> {
    return this.#db.getKeys(options)
  }

  getCount (): number {
    return this.#db.getCount()
  }
}

/**
 * Values derived from whole cached tables, kept by key while the tables stand as they were: all of them are dropped
 * when version() moves, and none is kept or served while it is undefined (CachedTable.version: this thread's reads
 * may not match the tables), so memory derived from a stale snapshot never outlives the change it missed. A value
 * derived as undefined (nothing found) is not kept: the next ask looks again.
 */
export class Derived<K, V> {
  readonly #version: () => number | undefined
  readonly #max: number
  readonly #fresh: ((value: V) => boolean) | undefined
  #values = new Map<K, V>()
  #at: number | undefined

  /** version: the tables' versions, combined (a sum, since each only grows); max: values kept at most, then all dropped. */
  constructor (version: () => number | undefined, options: { max?: number, fresh?: (value: V) => boolean } = {}) {
    this.#version = version
    this.#max = options.max ?? Infinity
    this.#fresh = options.fresh
  }

  /** The value kept for key, else derive()'s, kept when it may be. */
  of (key: K, derive: () => V): V
  of (key: K, derive: () => V | undefined): V | undefined
  of (key: K, derive: () => V | undefined): V | undefined {
    const version = this.#version()
    if (version === undefined) return derive()
    if (version !== this.#at) {
      this.#values = new Map()
      this.#at = version
    }
    const kept = this.#values.get(key)
    if (kept !== undefined && (this.#fresh === undefined || this.#fresh(kept))) return kept
    const value = derive()
    if (value === undefined) return undefined
    if (this.#values.size >= this.#max) this.#values = new Map()
    this.#values.set(key, value)
    return value
  }
}

/** One of something per store (a Derived over its tables), made when the store first asks: tests open many stores. */
export function perStore<S extends object, T> (make: (store: S) => T): (store: S) => T {
  const made = new WeakMap<S, T>()
  return (store) => {
    let t = made.get(store)
    if (t === undefined) made.set(store, t = make(store))
    return t
  }
}
