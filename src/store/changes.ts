import { AsyncLocalStorage } from 'node:async_hooks'
import type { Database, Key } from 'lmdb'

/** meta key: the node's last recorded seq, which the log's deletions cannot lower. */
const SEQ = 'cluster:seq'

/** One write to a replicated table: its LMDB name, the key, and the value (undefined for a removal). */
export type Change = [table: string, key: Key, value: unknown]

/**
 * The record lock a request or job writes under (RouteDef.exclusive): its claim's name and owner in the cluster's names'
 * log, where the transactions written under it take effect only while the claim is still the owner's
 * (src/cluster/fenced-commits.ts). seqs: the transactions committed under it, which its answer waits on; closed once
 * the lock is given back: work begun under it that writes later (a timer it started) writes under no lock.
 */
export interface Fence {
  name: string
  owner: string
  readonly seqs: number[]
  closed?: boolean
}

/**
 * Closes a fence: what its holder starts from here (a timer, a delivery) writes under no lock. Answers the seq of the
 * last transaction committed under it (0: none), which the holder waits to see decided before it gives the lock back.
 */
export function closeFence (fence: Fence): number {
  fence.closed = true
  return Math.max(0, ...fence.seqs)
}

/**
 * A transaction written under a fence, as the log keeps it: with each row's value before it, to put back if refused,
 * and the events it raised, held until the names' log has decided it (Outbox.append).
 */
interface FencedEntry {
  fence: { name: string, owner: string }
  changes: Change[]
  before: unknown[]
  events?: unknown[]
}

/** One recorded transaction waiting to ship. */
export interface Recorded {
  seq: number
  changes: Change[]
  /** The lock it was written under, and each of its rows' values before it (in its changes' order). */
  fence?: { name: string, owner: string }
  before?: unknown[]
  /** The events it raised under its lock: delivered once the names' log accepts it, never if it is refused. */
  events?: unknown[]
}

/** A transaction as the log keeps it. */
export type Logged = Change[] | FencedEntry

const isFenced = (entry: Logged): entry is FencedEntry => !Array.isArray(entry)

/** What a ChangeLog needs from its store's transactions. */
export interface ChangeScope {
  readonly inTransaction: boolean
  write<T> (fn: () => T): T
  beforeCommit (fn: () => void): void
  afterCommit (fn: () => void): void
  afterEnd (fn: () => void): void
}

/**
 * The writes a node made to the tables every node of a cluster holds (src/cluster), kept in LMDB in the same
 * transaction as the writes themselves: a transactional outbox, so a change is shipped to the engine even when the
 * process dies between its commit and the publish, and shipped in the order the node committed it. Writes that
 * arrive from the engine are applied inside `applying`, which records nothing.
 */
export class ChangeLog {
  readonly #log: Database<Logged, number>
  readonly #meta: Database<unknown, string>
  readonly #scope: ChangeScope
  /** The fence of the code running now, carried across its awaits (a held answer writes on later turns). */
  readonly #fences = new AsyncLocalStorage<Fence>()
  #open: Change[] | undefined
  /** The open transaction's fence, its rows' values before it, and the events it raised. */
  #openFence: { fence: Fence, before: unknown[], events: unknown[] } | undefined
  /** Whether the open transaction wrote a table whose writes answer only once shipped (not only eventual ones). */
  #durable = false
  #applying = 0
  #committed = 0
  #onCommitted: () => void = () => {}

  /** log: seq -> one transaction's changes; meta holds the node's last seq, which the log's deletions cannot lower. */
  constructor (log: Database<Logged, number>, meta: Database<unknown, string>, scope: ChangeScope) {
    this.#log = log
    this.#meta = meta
    this.#scope = scope
  }

  /**
   * Makes table's putSync and removeSync record what they write (lmdb-js calls them; every owner module does too).
   * An eventual table's writes ship like the others, but a transaction that wrote only such tables is not one a
   * request's answer waits for (takeCommitted leaves it out).
   */
  capture<V, K extends Key> (name: string, table: Database<V, K>, eventual = false): Database<V, K> {
    const put = table.putSync.bind(table)
    const remove = table.removeSync.bind(table)
    const get = (key: K): unknown => table.get(key)
    table.putSync = (key: K, value: V, ...rest: unknown[]) => this.#recorded(name, key, value, eventual, get, () => (put as (...a: unknown[]) => boolean)(key, value, ...rest))
    table.removeSync = (key: K, ...rest: unknown[]) => this.#recorded(name, key, undefined, eventual, get, () => (remove as (...a: unknown[]) => boolean)(key, ...rest))
    return table
  }

  /**
   * Runs fn, and whatever it goes on to run on later turns, under a record's lock: every transaction it commits is
   * kept with the lock and its rows' values before it, and ships as one command the names' log decides (a fence).
   */
  fenced<T> (fence: Fence, fn: () => T): T {
    return this.#fences.run(fence, fn)
  }

  /**
   * Keeps an event the open transaction raised with it, when it is written under a lock (true): the event is not the
   * outbox's until the names' log has accepted the transaction (src/cluster/record-shipping.ts), so a write that did
   * not count is never announced. False otherwise: the caller appends it to the outbox at once.
   */
  hold (event: unknown): boolean {
    if (this.#applying > 0 || !this.#scope.inTransaction) return false
    // A transaction under no lock that wrote no replicated row yet records nothing for its event.
    if (this.#open === undefined && !this.#live(this.#fences.getStore())) return false
    this.#begin()
    if (this.#openFence === undefined) return false
    this.#openFence.events.push(event)
    return true
  }

  /** Whether a fence is one its transactions are kept under: there, and not closed. */
  #live (fence: Fence | undefined): fence is Fence {
    return fence !== undefined && fence.closed !== true
  }

  /** Runs fn (a write) without recording it: what another node wrote and the engine delivered. */
  applying<T> (fn: () => T): T {
    this.#applying++
    try {
      return fn()
    } finally {
      this.#applying--
    }
  }

  /** Called after each commit that recorded changes (the thread tells its supervisor, which ships them). */
  onCommitted (fn: () => void): void {
    this.#onCommitted = fn
  }

  /**
   * The highest seq of a transaction this thread committed since the last call that wrote more than eventual tables
   * (0 if none): what a request's reply waits to see shipped.
   */
  takeCommitted (): number {
    const seq = this.#committed
    this.#committed = 0
    return seq
  }

  /** The seq of the last transaction this node recorded, by any thread (0 before the first). */
  get recorded (): number {
    return (this.#meta.get(SEQ) as number | undefined) ?? 0
  }

  /** How many transactions' changes wait to be shipped. */
  get waiting (): number {
    return this.#log.getCount()
  }

  /** Up to limit transactions' changes not shipped yet, oldest first. */
  pending (limit: number): Recorded[] {
    const out: Recorded[] = []
    for (const { key, value } of this.#log.getRange({ limit })) out.push(isFenced(value) ? { seq: key, ...value } : { seq: key, changes: value })
    return out
  }

  /** The rows of every change not shipped yet, by keyOf(table, key), each with the seq of its latest change. */
  pendingKeys (keyOf: (table: string, key: Key) => string): Map<string, number> {
    const keys = new Map<string, number>()
    for (const { key: seq, value } of this.#log.getRange()) for (const [table, key] of isFenced(value) ? value.changes : value) keys.set(keyOf(table, key), seq as number)
    return keys
  }

  /** Deletes the changes shipped, through seq (inside a write). */
  shipped (through: number): void {
    for (const seq of this.#log.getKeys({ end: through + 1 })) this.#log.removeSync(seq)
  }

  #recorded<K extends Key> (table: string, key: K, value: unknown, eventual: boolean, get: (key: K) => unknown, write: () => boolean): boolean {
    if (this.#applying > 0) return write()
    if (!this.#scope.inTransaction) return this.#scope.write(() => this.#recorded(table, key, value, eventual, get, write))
    this.#begin()
    if (!eventual) this.#durable = true
    this.#open!.push([table, key, value])
    this.#openFence?.before.push(get(key))
    return write()
  }

  /** Opens the record of the transaction under way, committed with it, on its first change (or held event). */
  #begin (): void {
    if (this.#open !== undefined) return
    const open: Change[] = this.#open = []
    const fence = this.#fences.getStore()
    const fenced = this.#openFence = this.#live(fence) ? { fence, before: [], events: [] } : undefined
    this.#scope.afterEnd(() => {
      this.#open = undefined
      this.#openFence = undefined
      this.#durable = false
    })
    this.#scope.beforeCommit(() => {
      const seq = this.recorded + 1
      const durable = this.#durable
      this.#meta.putSync(SEQ, seq)
      this.#log.putSync(seq, fenced === undefined ? open : { fence: { name: fenced.fence.name, owner: fenced.fence.owner }, changes: open, before: fenced.before, ...(fenced.events.length > 0 ? { events: fenced.events } : {}) })
      this.#scope.afterCommit(() => {
        if (durable && seq > this.#committed) this.#committed = seq
        fenced?.fence.seqs.push(seq)
        this.#onCommitted()
      })
    })
  }
}
