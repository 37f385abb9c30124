import { createHash } from 'node:crypto'
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import type { ObjectSum } from './records.js'
import { runOnce } from './rewrite.js'
import type { Store } from './store.js'

/** The size and SHA-256 of bytes, as the `objects` table records them. */
function sumOf (bytes: Uint8Array): ObjectSum {
  return { bytes: bytes.length, sha256: createHash('sha256').update(bytes).digest('hex') }
}

/**
 * The embedded object store for creative assets: one file per object under DATA_DIR/objects, and a row per object in
 * the `objects` table, written in the caller's transaction. Writes go to a temporary name and are renamed into place,
 * so a reader never sees half an object. On a cluster the table is replicated: the shipper puts an object's bytes in
 * the engine before its row, and every other node fetches them when it applies the row (src/cluster/objects.ts).
 */
export class ObjectStore {
  readonly #dir: string
  readonly #store: Store
  /** A cluster node's way to get an object another node stored, set once it joins (src/cluster/objects.ts). */
  #fetch: ((key: string) => Promise<boolean>) | undefined

  constructor (dataDir: string, store: Store) {
    this.#dir = join(dataDir, 'objects')
    this.#store = store
    mkdirSync(this.#dir, { recursive: true })
  }

  /** The file of an object (for the moderation worker and the player). */
  path (key: string): string {
    if (!/^[A-Za-z0-9_-]+$/.test(key)) throw new Error(`bad object key ${key}`)
    return join(this.#dir, key)
  }

  /** Stores bytes under key and records them; returns their size and SHA-256. */
  put (key: string, bytes: Buffer): ObjectSum {
    const sum = sumOf(bytes)
    this.#write(key, bytes)
    this.#store.write(() => this.#store.objects.putSync(key, sum))
    return sum
  }

  /** Whether this node holds the bytes its `objects` row describes. */
  has (key: string): boolean {
    const sum = this.#store.objects.get(key)
    const p = this.path(key)
    return sum !== undefined && existsSync(p) && statSync(p).size === sum.bytes
  }

  /** Whether key has a row: an object some node stored and none removed. */
  recorded (key: string): boolean {
    return this.#store.objects.get(key) !== undefined
  }

  /** The bytes of a stored object, or undefined when this node does not hold them. */
  read (key: string): Buffer | undefined {
    return existsSync(this.path(key)) ? readFileSync(this.path(key)) : undefined
  }

  /**
   * Keeps bytes another node stored, when they are what this node's row of key says (else false: a newer row is on
   * its way, and its own fetch brings them).
   */
  receive (key: string, bytes: Uint8Array): boolean {
    const sum = this.#store.objects.get(key)
    if (sum === undefined || sumOf(bytes).sha256 !== sum.sha256) return false
    this.#write(key, Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength))
    return true
  }

  /** Drops the bytes of an object whose row is gone. */
  discard (key: string): void {
    rmSync(this.path(key), { force: true })
  }

  /** The keys whose rows this node holds without their bytes (a node that was away, or stopped mid-fetch). */
  missing (): string[] {
    const out: string[] = []
    for (const key of this.#store.objects.getKeys()) if (!this.has(key)) out.push(key)
    return out
  }

  /** Records the objects an earlier version stored without rows, once (a cluster replicates what has a row). */
  adopt (): void {
    runOnce(this.#store, 'objects', () => this.#store.write(() => {
      for (const key of readdirSync(this.#dir)) {
        if (key.endsWith('.tmp') || this.#store.objects.get(key) !== undefined) continue
        this.#store.objects.putSync(key, sumOf(readFileSync(this.path(key))))
      }
    }))
  }

  fetchWith (fetch: (key: string) => Promise<boolean>): void {
    this.#fetch = fetch
  }

  /**
   * Resolves true once this node holds the object (fetched from the cluster's engine when it does not), false when
   * it cannot get it now.
   */
  async local (key: string): Promise<boolean> {
    if (this.has(key)) return true
    return this.#fetch !== undefined && await this.#fetch(key)
  }

  #write (key: string, bytes: Buffer): void {
    const tmp = `${this.path(key)}.${process.pid}.tmp`
    writeFileSync(tmp, bytes)
    renameSync(tmp, this.path(key))
  }
}
