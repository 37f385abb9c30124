import { isDeepStrictEqual } from 'node:util'
import { headers } from 'nats'
import type { Logger } from '../log.js'
import type { Change, ChangeLog } from '../store/changes.js'
import type { Store } from '../store/store.js'
import { BOOK_TABLES, EVENTUAL_TABLES, SNAPSHOT_TABLES } from '../store/tables.js'
import { BOOK_SUBJECT, SIGNALS_SUBJECT, STATE_BUCKET, type Engine } from './engine.js'
import { packBook, packedParts } from './book-parts.js'
import { packValue, parseStateKey, stateKey } from './state-keys.js'

/** How often a node writes the latest values of the eventual rows it shipped as signals into the state bucket. */
export const SNAPSHOT_MS = 30_000

/**
 * How often it writes there the book's rows that outlive the book stream (a seat's counters): a node joining reads
 * them there, and GET /stats through it counts them.
 */
const BOOK_SNAPSHOT_MS = 1000

/** Transactions' changes published to the engine in one round of acknowledgements. */
const BATCH = 256

/**
 * Ships the node's recorded changes (src/store/changes.ts) to the engine, in commit order, and deletes them once the
 * engine has acknowledged every one: a quorum of its members holds them. One shipper per node, so a row's later value
 * is never published before its earlier one.
 *
 * A row of a table every request reads goes to the state bucket as its own KV message, with the id
 * `<incarnation>.<seq>.<n>`: a publish whose acknowledgement was lost and is sent again is dropped by JetStream's
 * duplicate window instead of writing an old value over a newer one from another node. The eventual tables' rows
 * (FEIN, heartbeats: EVENTUAL_TABLES), rewritten every few seconds per screen, go as one message per round to the
 * signals stream, each row's last value of the round once: a message per row cost the cluster ten times one node's
 * CPU per FEIN update (bench/cluster), most of it the engine's and the nodes' work per message. Every SNAPSHOT_MS
 * their latest values are also written to the state bucket, which a node joining reads before it follows the
 * signals. The book's rows (BOOK_TABLES: bids, and their removal by the spot that settled them) go the same way, one
 * message per round to the book stream, grouped by the partition of each bid's screen (book-parts.ts), so that a node
 * unpacks only the bids of the partitions it owns; a bid is dead once its imp expires, so the stream, kept that long,
 * is the whole book of bids, and only the book's rows that outlive it (a seat's hourly counters: SNAPSHOT_TABLES) also
 * go to the state bucket, every BOOK_SNAPSHOT_MS: once a round, every node received each as a state-bucket entry beside
 * the book message that already brought it, a few microseconds of a bid on every node (bench/cluster). Which rows are
 * due is kept in LMDB with the round's acknowledgement (snapshots_due), so a node killed before its snapshot writes
 * them when it is back; a node that never comes back leaves the bucket up to BOOK_SNAPSHOT_MS behind on its counters,
 * which matters only to a node joining once the book stream no longer holds them.
 */
export class ChangeShipper {
  readonly #store: Store
  readonly #changes: ChangeLog
  readonly #engine: Engine
  readonly #incarnation: string
  readonly #log: Logger
  readonly #onShipped: (through: number) => void
  readonly #beforeShip: (batch: Array<{ changes: Change[] }>) => Promise<void>
  readonly #signals: string
  readonly #book: string
  readonly #partitions: number
  /** The eventual rows shipped as signals since the last snapshot, by state key. */
  #dirty = new Map<string, Change>()
  readonly #snapshots: NodeJS.Timeout
  readonly #bookSnapshots: NodeJS.Timeout
  #running: Promise<void> | undefined
  #again = false
  #failing = false

  /** beforeShip: what must reach the engine before a batch's rows do (the bytes of the objects they describe). */
  constructor (deps: { store: Store, changes: ChangeLog, engine: Engine, node: string, incarnation: string, partitions: number, log: Logger, onShipped: (through: number) => void, beforeShip: (batch: Array<{ changes: Change[] }>) => Promise<void> }) {
    this.#store = deps.store
    this.#changes = deps.changes
    this.#engine = deps.engine
    this.#incarnation = deps.incarnation
    this.#log = deps.log
    this.#onShipped = deps.onShipped
    this.#beforeShip = deps.beforeShip
    this.#signals = `${SIGNALS_SUBJECT}.${deps.node}`
    this.#book = `${BOOK_SUBJECT}.${deps.node}`
    this.#partitions = deps.partitions
    this.#snapshots = setInterval(() => { this.#snapshot().catch(() => {}) }, SNAPSHOT_MS)
    this.#snapshots.unref()
    this.#bookSnapshots = setInterval(() => { this.#snapshotBook().catch(() => {}) }, BOOK_SNAPSHOT_MS)
    this.#bookSnapshots.unref()
  }

  /** Ships what is waiting (again, once the round under way ends). */
  kick (): void {
    if (this.#running !== undefined) {
      this.#again = true
      return
    }
    this.#running = this.#ship().finally(() => { this.#running = undefined })
  }

  /** Resolves once no round is under way, and writes the snapshot of what was shipped as signals. */
  async idle (): Promise<void> {
    while (this.#running !== undefined) await this.#running
    clearInterval(this.#snapshots)
    clearInterval(this.#bookSnapshots)
    await this.#snapshot().catch(() => {})
    await this.#snapshotBook().catch(() => {})
  }

  /**
   * Writes the rows this node shipped as signals since the last snapshot to the state bucket, each as this node holds
   * it now, with every node's signals applied: a partner's calls for one screen go through any node, and two nodes
   * that both sent it each write the row as the signals left it, not each its own older value. What the engine does
   * not take waits for the next snapshot.
   */
  async #snapshot (): Promise<void> {
    const rows = [...this.#dirty]
    if (rows.length === 0) return
    this.#dirty = new Map()
    this.#store.refresh()
    const results = await Promise.allSettled(rows.map(([kvKey, [table, key]]) => this.#put(kvKey, this.#store.replicated(table)!.get(key))))
    results.forEach((r, i) => {
      const [kvKey, change] = rows[i]!
      if (r.status === 'rejected' && !this.#dirty.has(kvKey)) this.#dirty.set(kvKey, change)
    })
  }

  /**
   * Writes the book's rows due (snapshots_due) to the state bucket, each as this node holds it now (only this node
   * writes its counters, so no other node's newer value can be overwritten); a row the engine does not take stays due.
   */
  async #snapshotBook (): Promise<void> {
    const due = [...this.#store.snapshotsDue.getKeys()]
    if (due.length === 0) return
    this.#store.refresh()
    const current = (kvKey: string): unknown => {
      const { table, key } = parseStateKey(kvKey)
      return this.#store.replicated(table)?.get(key)
    }
    const values = due.map(current)
    const written = (await Promise.allSettled(due.map((kvKey, i) => this.#put(kvKey, values[i])))).flatMap((r, i) => r.status === 'fulfilled' ? [i] : [])
    // A row counted again since it was read stays due: the value written is not its latest.
    if (written.length > 0) this.#store.write(() => { for (const i of written) if (isDeepStrictEqual(current(due[i]!), values[i])) this.#store.snapshotsDue.removeSync(due[i]!) })
  }

  /** One row to the state bucket: its value, or a delete marker. */
  #put (kvKey: string, value: unknown, msgID?: string): Promise<unknown> {
    const subject = `$KV.${STATE_BUCKET}.${kvKey}`
    const opts = msgID !== undefined ? { msgID } : {}
    if (value !== undefined) return this.#engine.js.publish(subject, packValue(value), opts)
    const h = headers()
    h.set('KV-Operation', 'DEL')
    return this.#engine.js.publish(subject, undefined, { ...opts, headers: h })
  }

  async #ship (): Promise<void> {
    do {
      this.#again = false
      this.#store.refresh()
      const batch = this.#changes.pending(BATCH)
      if (batch.length === 0) return
      const signals = new Map<string, Change>()
      const book = new Map<string, Change>()
      try {
        await this.#beforeShip(batch)
        const puts: Array<Promise<unknown>> = []
        for (const { seq, changes } of batch) {
          changes.forEach((change, n) => {
            const kvKey = stateKey(change[0], change[1])
            // A row's last value of the round: rows of different keys apply in any order to the same result.
            if (EVENTUAL_TABLES.has(change[0])) signals.set(kvKey, change)
            else if (BOOK_TABLES.has(change[0])) book.set(kvKey, change)
            else puts.push(this.#put(kvKey, change[2], `${this.#incarnation}.${seq}.${n}`))
          })
        }
        const round = `${this.#incarnation}.${batch[0]!.seq}-${batch[batch.length - 1]!.seq}`
        packedParts([...signals.values()]).forEach((part, n) => puts.push(this.#engine.js.publish(this.#signals, part, { msgID: `${round}.${n}` })))
        packBook(book.values(), this.#partitions).forEach((part, n) => puts.push(this.#engine.js.publish(this.#book, part, { msgID: `${round}.${n}` })))
        await Promise.all(puts)
      } catch (err) {
        // The changes stay recorded; the next kick (the supervisor's timer at the latest) ships them again.
        if (!this.#failing) this.#log.warn('cluster: the engine did not acknowledge changes; they wait in LMDB', { error: err instanceof Error ? err.message : String(err), waiting_transactions: batch.length })
        this.#failing = true
        return
      }
      if (this.#failing) this.#log.info('cluster: the engine acknowledges changes again')
      this.#failing = false
      for (const [kvKey, change] of signals) this.#dirty.set(kvKey, change)
      const through = batch[batch.length - 1]!.seq
      this.#store.write(() => {
        this.#changes.shipped(through)
        // The book's rows that outlive the stream go to the state bucket with the next snapshot, whatever befalls this
        // node before it: a snapshot kept only in memory was lost with a node killed before it, and a node joining
        // later then under-counted.
        for (const [kvKey, change] of book) if (SNAPSHOT_TABLES.has(change[0])) this.#store.snapshotsDue.putSync(kvKey, 1)
      })
      this.#onShipped(through)
      if (batch.length === BATCH) this.#again = true
    } while (this.#again)
  }
}
