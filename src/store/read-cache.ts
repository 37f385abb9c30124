import type { Database, RangeOptions } from 'lmdb'

/**
 * A table whose decoded values are kept in memory after a read. Writes drop the entry instead of caching the new
 * value, so a transaction that rolls back (a dry run, a failed request) can never leave a value in the cache that is
 * not in LMDB: the next read fetches the committed one. (lmdb-js's own `cache` option keeps an aborted object value.)
 * This process is the only writer of these tables, so nothing else can make an entry stale.
 */
export class CachedTable<V> {
  readonly #db: Database<V, string>
  readonly #max: number
  readonly #values = new Map<string, V>()
  /** Moves on every write, so that whatever is derived from the whole table knows when to derive again. */
  version = 0

  constructor (db: Database<V, string>, max = 250_000) {
    this.#db = db
    this.#max = max
  }

  get (key: string): V | undefined {
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
    this.version++
    this.#values.delete(key)
    this.#db.putSync(key, value)
  }

  removeSync (key: string): void {
    this.version++
    this.#values.delete(key)
    this.#db.removeSync(key)
  }

  getRange (options?: RangeOptions): ReturnType<Database<V, string>['getRange']> {
    return this.#db.getRange(options)
  }

  getCount (): number {
    return this.#db.getCount()
  }
}
