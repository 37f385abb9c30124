import type { ObjectStore as EngineObjects } from 'nats'
import type { Logger } from '../log.js'
import type { Change } from '../store/changes.js'
import type { ObjectStore } from '../store/objects.js'

/** How long a node waits before asking the engine again for bytes it could not get. */
const RETRY_MS = 1000

/**
 * The bytes of the objects (creative assets) a cluster's nodes store, kept in the engine's object store (chunked, as
 * replicated as a stream). The shipper puts an object's bytes there before it publishes the object's row, so a node
 * that applies the row can always get them; it fetches them at once, and a request that needs them first (the
 * moderation of an upload confirmed on another node) waits for that fetch.
 */
export class ObjectReplica {
  readonly #bucket: EngineObjects
  readonly #objects: ObjectStore
  readonly #log: Logger
  /** Fetches under way, by key: concurrent askers share one. */
  readonly #fetching = new Map<string, Promise<boolean>>()
  #stopped = false

  constructor (deps: { bucket: EngineObjects, objects: ObjectStore, log: Logger }) {
    this.#bucket = deps.bucket
    this.#objects = deps.objects
    this.#log = deps.log
    this.#objects.fetchWith((key) => this.#fetch(key))
  }

  /** Fetches what this node's rows describe and it does not hold (it was away, or stopped mid-fetch). */
  resume (): void {
    for (const key of this.#objects.missing()) this.#keep(key)
  }

  /** Before a batch of changes is published: the bytes of every object row in it go to the engine first. */
  async beforeShip (batch: Array<{ changes: Change[] }>): Promise<void> {
    const keys = new Set<string>()
    for (const { changes } of batch) for (const [table, key, value] of changes) if (table === 'objects' && value !== undefined) keys.add(key as string)
    await Promise.all([...keys].map(async (key) => {
      // Gone since (replaced by a newer put whose row follows): that row's turn puts the newer bytes.
      const bytes = this.#objects.read(key)
      if (bytes !== undefined) await this.#bucket.putBlob({ name: key }, bytes)
    }))
  }

  /** After the applier wrote an object's row from another node: fetch its bytes, or drop them with the row. */
  applied (table: string, key: string): void {
    if (table !== 'objects') return
    if (!this.#objects.recorded(key)) this.#objects.discard(key)
    else this.#keep(key, true)
  }

  stop (): void {
    this.#stopped = true
  }

  /**
   * Fetches key until this node holds it, retrying while the engine cannot answer. changed: the row is new here, so
   * a file of the same size is no proof that this node holds its bytes.
   */
  #keep (key: string, changed = false): void {
    this.#fetch(key, changed).then((held) => {
      if (!held && !this.#stopped) setTimeout(() => { if (!this.#objects.has(key)) this.#keep(key) }, RETRY_MS).unref()
    }, () => {})
  }

  #fetch (key: string, changed = false): Promise<boolean> {
    let fetching = this.#fetching.get(key)
    if (fetching === undefined) {
      fetching = this.#get(key, changed).finally(() => this.#fetching.delete(key))
      this.#fetching.set(key, fetching)
    }
    return fetching
  }

  async #get (key: string, changed: boolean): Promise<boolean> {
    if (!changed && this.#objects.has(key)) return true
    try {
      const bytes = await this.#bucket.getBlob(key)
      return bytes !== null && this.#objects.receive(key, bytes)
    } catch (err) {
      this.#log.warn('cluster: could not fetch an object from the engine; retrying', { key, error: err instanceof Error ? err.message : String(err) })
      return false
    }
  }
}
