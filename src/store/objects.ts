import { createHash } from 'node:crypto'
import { existsSync, mkdirSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'

/**
 * The embedded object store for creative assets: one file per object under DATA_DIR/objects. Writes go to a
 * temporary name and are renamed into place, so a reader never sees half an object. An S3-style store would sit
 * behind the same four calls.
 */
export class ObjectStore {
  readonly #dir: string

  constructor (dataDir: string) {
    this.#dir = join(dataDir, 'objects')
    mkdirSync(this.#dir, { recursive: true })
  }

  /** The file of an object (for the moderation worker and the player). */
  path (key: string): string {
    if (!/^[A-Za-z0-9_-]+$/.test(key)) throw new Error(`bad object key ${key}`)
    return join(this.#dir, key)
  }

  /** Stores bytes under key; returns their size and SHA-256. */
  put (key: string, bytes: Buffer): { bytes: number, sha256: string } {
    const tmp = `${this.path(key)}.${process.pid}.tmp`
    writeFileSync(tmp, bytes)
    renameSync(tmp, this.path(key))
    return { bytes: bytes.length, sha256: createHash('sha256').update(bytes).digest('hex') }
  }

  /** Size of a stored object, or undefined. */
  size (key: string): number | undefined {
    const p = this.path(key)
    return existsSync(p) ? statSync(p).size : undefined
  }

  remove (key: string): void {
    rmSync(this.path(key), { force: true })
  }
}
