import { isDeepStrictEqual } from 'node:util'
import { headers } from 'nats'
import type { Logger } from '../log.js'
import type { Change, ChangeLog } from '../store/changes.js'
import type { Store } from '../store/store.js'
import { BOOK_TABLES, EVENTUAL_TABLES, SNAPSHOT_TABLES, WITH_ROUND } from '../store/tables.js'
import { SIGNALS_SUBJECT, STATE_BUCKET, type Engine } from './engine.js'
import { bookMessages, bookSubject, packedParts } from './book-parts.js'
import { packStamped, packValue, parseStateKey, Stamped, stateKey } from './state-keys.js'
import { RowVersions } from './row-versions.js'
import type { CommitCommand, CopiedCommand, FencedCommits } from './fenced-commits.js'
import type { Verdict } from './records.js'
import { oneWayEach, RecordShipping, wayOf, type Logged, type Plan } from './record-shipping.js'

/** How often a node writes the latest values of the eventual rows it shipped as signals into the state bucket. */
export const SNAPSHOT_MS = 30_000

/**
 * How often it writes there the book's rows that are not bids (a seat's counters, SNAPSHOT_TABLES): every node reads
 * them there, so GET /stats through any node counts every node's rows this long after they were counted at most.
 */
const BOOK_SNAPSHOT_MS = 1000

/** JetStream's error code for a stream with no message on the subject asked for. */
const NO_MESSAGE = 10037

/**
 * Snapshot rows whose last written value the shipper remembers at most, the least recently written forgotten first: a
 * seat's counters get a row an hour, so the map would grow for good, and a row forgotten is only written once more with
 * its round the next time it counts money.
 */
const WRITTEN_KEPT = 10_000

/** Transactions' changes published to the engine in one round of acknowledgements. */
const BATCH = 256

/** The rows of a round after which the next lingers (ChangeShipper.#ship): a round that many clients' bids make. */
const LINGER_ROWS = 16

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
 * signals. The bids (BOOK_TABLES) go the same way to the book stream, one message per round and partition of their
 * screens, on the partition's subject (book-parts.ts): only the nodes holding a partition consume its subject, so a bid
 * costs a node that neither took it nor owns its screen nothing (bench/cluster); a bid is dead once its imp expires, so
 * the stream, kept that long, is the whole book of bids. The book's other rows, a seat's hourly counters
 * (SNAPSHOT_TABLES), each node's own rows, go only to the state bucket: in the book, every node had to consume every
 * round for them. A change that moves money (a win, a play billed: TableSpec.withRound) goes with its round, so it is
 * in the bucket when its request is answered; bids counted go with the next snapshot, every BOOK_SNAPSHOT_MS, and
 * which rows are due is kept in LMDB with the round's acknowledgement (snapshots_due), so a node killed before its
 * snapshot writes them when it is back. A transaction written under a record's lock goes to the names' log instead, as
 * one command decided there against the lock (fenced-commits.ts), and so does every transaction that changed a record
 * (RECORD_TABLES): the round waits for their verdicts, and keeps the refusals for the requests waiting on them.
 */
export class ChangeShipper {
  readonly #store: Store
  readonly #changes: ChangeLog
  readonly #engine: Engine
  readonly #incarnation: string
  readonly #log: Logger
  readonly #onShipped: (through: number, bids: Array<[Change, number]>) => void
  /** Appends events held with locked transactions the names' log accepted to the outbox (Outbox.release). */
  readonly #release: (events: unknown[]) => void
  readonly #beforeShip: (batch: Array<{ changes: Change[] }>) => Promise<void>
  /** The versions of rows that come stamped, which this node's plain writes of them carry. */
  readonly #versions: RowVersions
  /** The round's records and locked transactions, to the names' log. */
  readonly #records: RecordShipping
  readonly #signals: string
  readonly #node: string
  readonly #partitions: number
  readonly #lingerMs: number
  /** The eventual rows shipped as signals since the last snapshot, by state key. */
  #dirty = new Map<string, Change>()
  readonly #snapshots: NodeJS.Timeout
  readonly #bookSnapshots: NodeJS.Timeout
  /** The value of each of this node's snapshot rows last written to the state bucket (TableSpec.withRound reads it). */
  readonly #written = new Map<string, unknown>()
  /** Each of those rows' last write on its way: the next waits for it, so an older value never lands after a newer. */
  readonly #writing = new Map<string, Promise<unknown>>()
  #snapshottingBook = false
  /** Rows whose repair is under way. */
  readonly #repairing = new Set<string>()
  #running: Promise<void> | undefined
  #again = false
  #failing = false

  /**
   * onShipped: the engine holds the changes through `through`, the round's bids among them (each with its change's
   * seq); release: appends, inside the round's last write, the events of locked transactions the log accepted;
   * beforeShip: what must reach the engine before a batch's rows do (the bytes of the objects they describe);
   * fenced: the rows the names' log decides; commit: proposes a command to it, stamped proposedAt in the log's time,
   * its verdict once applied here; logNow: the log's time now, as far as this node can tell (undefined before it follows
   * the log).
   */
  constructor (deps: { store: Store, changes: ChangeLog, engine: Engine, node: string, incarnation: string, partitions: number, lingerMs: number, log: Logger, onShipped: (through: number, bids: Array<[Change, number]>) => void, release: (events: unknown[]) => void, beforeShip: (batch: Array<{ changes: Change[] }>) => Promise<void>, fenced: FencedCommits, commit: (key: string, body: CommitCommand | CopiedCommand, proposedAt: number) => Promise<Verdict | undefined>, logNow: () => number | undefined }) {
    this.#store = deps.store
    this.#changes = deps.changes
    this.#engine = deps.engine
    this.#incarnation = deps.incarnation
    this.#log = deps.log
    this.#onShipped = deps.onShipped
    this.#release = deps.release
    this.#beforeShip = deps.beforeShip
    this.#signals = `${SIGNALS_SUBJECT}.${deps.node}`
    this.#node = deps.node
    this.#partitions = deps.partitions
    this.#lingerMs = deps.lingerMs
    this.#versions = new RowVersions(deps.store)
    this.#records = new RecordShipping({ store: deps.store, fenced: deps.fenced, incarnation: deps.incarnation, commit: deps.commit, logNow: deps.logNow, put: (kvKey, value, msgID) => this.#put(kvKey, value, msgID), log: deps.log })
    this.#snapshots = setInterval(() => { this.#snapshot().catch(() => {}) }, SNAPSHOT_MS)
    this.#snapshots.unref()
    this.#bookSnapshots = setInterval(() => {
      this.#snapshotBook().catch(() => {})
      this.#store.refresh()
      for (const kvKey of this.#store.repairsDue.getKeys()) this.repair(kvKey)
    }, BOOK_SNAPSHOT_MS)
    this.#bookSnapshots.unref()
  }

  /**
   * The state bucket brought an older value of a row than this node's (a late copy, fenced-commits.ts), and the
   * applier marked its repair due (repairs_due): if the bucket's last value of it is still older (asked of the
   * stream's leader: a follower could answer from before the late copy), this node's goes back on top, where a node
   * joining reads it. Not a round's: a repair that fails stays due, and is tried again with the book's snapshots
   * (after a restart too).
   */
  repair (kvKey: string): void {
    this.#repair(kvKey).catch((err: unknown) => this.#log.warn('cluster: an older value of a row was not put right in the state bucket yet', { key: kvKey, error: err instanceof Error ? err.message : String(err) }))
  }

  async #repair (kvKey: string): Promise<void> {
    const due = this.#store.repairsDue.get(kvKey)
    if (due === undefined || this.#repairing.has(kvKey)) return
    this.#repairing.add(kvKey)
    try {
      const status = await this.#engine.state.status()
      const last = await this.#engine.jsm.streams.getMessage(status.streamInfo.config.name, { last_by_subj: `$KV.${STATE_BUCKET}.${kvKey}` }).catch((err: unknown) => {
        // No message at all for the row (purged): this node's value goes there too. Any other failure: tried again.
        if ((err as { api_error?: { err_code?: number } }).api_error?.err_code === NO_MESSAGE) return undefined
        throw err
      })
      this.#store.refresh()
      const ours = this.#versions.repairOver(kvKey, last === undefined ? undefined : { bytes: last.data, revision: last.seq })
      if (ours !== undefined) {
        this.#log.info('cluster: an older value of a row landed last in the state bucket; this node\'s newer one is put back', { key: kvKey, stamp: ours.at.stamp })
        await this.#put(kvKey, ours)
      }
      // Done, unless another older value came meanwhile (its repair is due in turn).
      this.#store.write(() => { if (this.#store.repairsDue.get(kvKey) === due) this.#store.repairsDue.removeSync(kvKey) })
    } finally {
      this.#repairing.delete(kvKey)
    }
  }

  /** Copies the rows the names' log keeps uncopied for a lock's commits to the state bucket (RecordShipping.copyPending). */
  async copyPending (name: string): Promise<void> {
    await this.#records.copyPending(name)
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
   * Writes the book's snapshot rows due (snapshots_due) to the state bucket, each as this node holds it now; a row the
   * engine does not take, or counted again since it was read, stays due. Beside the rounds, not in them: a state bucket
   * that cannot take writes for a while (its leader elected again) must not hold up the bids, whose rounds go to the
   * book stream.
   */
  async #snapshotBook (): Promise<void> {
    if (this.#snapshottingBook) return
    this.#snapshottingBook = true
    try {
      const due = [...this.#store.snapshotsDue.getKeys()]
      if (due.length === 0) return
      this.#store.refresh()
      const values = due.map((kvKey) => this.#current(kvKey))
      const written = (await Promise.allSettled(due.map((kvKey, i) => this.#putOwn(kvKey, values[i])))).flatMap((r, i) => r.status === 'fulfilled' ? [i] : [])
      if (written.length > 0) this.#store.write(() => { for (const i of written) if (isDeepStrictEqual(this.#current(due[i]!), values[i])) this.#store.snapshotsDue.removeSync(due[i]!) })
    } finally {
      this.#snapshottingBook = false
    }
  }

  /**
   * One of this node's own snapshot rows to the state bucket, after the write of it on its way: only this node writes
   * it, so the bucket ends on the value written last.
   */
  #putOwn (kvKey: string, value: unknown): Promise<unknown> {
    const before = this.#writing.get(kvKey)
    const put = (before === undefined ? this.#put(kvKey, value) : before.catch(() => {}).then(() => this.#put(kvKey, value))).then(() => {
      this.#written.delete(kvKey)
      this.#written.set(kvKey, value)
      if (this.#written.size > WRITTEN_KEPT) this.#written.delete(this.#written.keys().next().value!)
    })
    this.#writing.set(kvKey, put)
    const done = (): void => { if (this.#writing.get(kvKey) === put) this.#writing.delete(kvKey) }
    put.then(done, done)
    return put
  }

  /** This node's value now of a row of the state bucket's. */
  #current (kvKey: string): unknown {
    const { table, key } = parseStateKey(kvKey)
    return this.#store.replicated(table)?.get(key)
  }

  /** One row to the state bucket: its value (stamped, or not), or a delete marker. */
  #put (kvKey: string, value: unknown, msgID?: string): Promise<unknown> {
    const subject = `$KV.${STATE_BUCKET}.${kvKey}`
    const opts = msgID !== undefined ? { msgID } : {}
    if (value instanceof Stamped) return this.#engine.js.publish(subject, packStamped(value), opts)
    if (value !== undefined) return this.#engine.js.publish(subject, packValue(value), opts)
    const h = headers()
    h.set('KV-Operation', 'DEL')
    return this.#engine.js.publish(subject, undefined, { ...opts, headers: h })
  }

  async #ship (): Promise<void> {
    /** When the round before this one was sent, when this one lingers after it. */
    let lingerFrom: number | undefined
    do {
      // A busy node: a round of LINGER_ROWS rows or more, and changes committed while it was on its way. The next
      // round waits out the linger from the last one's start, gathering more commits into its message: what the
      // engine, this supervisor and the partition's owner spend on a round is paid per message. At c=50 a round
      // carried some 20 bids; the cluster's bid cost 200 us of CPU with rounds back to back, 155-163 with 5 ms of
      // linger, at 7,900-8,300 bids/s against 7,400 and a p99 of 12-13 ms against 14-15 (Kafka's producer has
      // lingered 5 ms by default since 4.0 for the same reason). Fewer clients make smaller rounds, which do not
      // linger: with 8, lingering halved the bids a second, each client waiting out the linger on every bid.
      if (lingerFrom !== undefined) {
        const left = lingerFrom + this.#lingerMs - performance.now()
        if (left > 0) await new Promise((resolve) => setTimeout(resolve, left))
      }
      const sent = performance.now()
      lingerFrom = undefined
      this.#again = false
      this.#store.refresh()
      const batch = oneWayEach(this.#changes.pending(BATCH))
      if (batch.length === 0) return
      const signals = new Map<string, Change>()
      const bids = new Map<string, [Change, number]>()
      /** The round's changes to the book's snapshot rows: written with it (TableSpec.withRound), or left due. */
      const withRound = new Map<string, unknown>()
      const due = new Set<string>()
      let plan: Plan = { entries: [] }
      const logged: Logged[] = []
      const released: unknown[] = []
      try {
        await this.#beforeShip(batch)
        const puts: Array<Promise<unknown>> = []
        for (const entry of batch) {
          const { seq, changes } = entry
          const toLog: Logged = { seq, fence: entry.fence, log: [], after: [], ...(entry.events !== undefined ? { events: entry.events } : {}) }
          changes.forEach((change, n) => {
            const kvKey = stateKey(change[0], change[1])
            // A row's last value of the round: rows of different keys apply in any order to the same result.
            if (EVENTUAL_TABLES.has(change[0])) signals.set(kvKey, change)
            else if (SNAPSHOT_TABLES.has(change[0])) {
              if (withRound.has(kvKey)) return
              if (WITH_ROUND.get(change[0])?.(this.#written.get(kvKey), change[2]) !== true) due.add(kvKey)
              else {
                due.delete(kvKey)
                withRound.set(kvKey, this.#current(kvKey))
              }
            } else if (BOOK_TABLES.has(change[0])) bids.set(kvKey, [change, seq])
            else {
              const way = wayOf(entry, change[0])
              if (way === 'now') puts.push(this.#put(kvKey, this.#versions.outgoing(kvKey, change[2]), `${this.#incarnation}.${seq}.${n}`))
              else toLog[way].push({ change, n, before: entry.before?.[n] })
            }
          })
          if (toLog.log.length > 0 || toLog.after.length > 0) logged.push(toLog)
          // Events of a locked transaction that wrote no row the log decides: nothing of it can be refused.
          else if (entry.events !== undefined) released.push(...entry.events)
        }
        const round = `${this.#incarnation}.${batch[0]!.seq}-${batch[batch.length - 1]!.seq}`
        for (const [kvKey, value] of withRound) puts.push(this.#putOwn(kvKey, value))
        packedParts([...signals.values()]).forEach((part, n) => puts.push(this.#engine.js.publish(this.#signals, part, { msgID: `${round}.${n}` })))
        bookMessages([...bids.values()].map(([change]) => change), this.#partitions).forEach(({ partition, data }, n) => puts.push(this.#engine.js.publish(bookSubject(partition, this.#node), data, { msgID: `${round}.${partition}.${n}` })))
        plan = this.#records.plan(logged)
        if (plan.entries.length > 0) puts.push(this.#records.ship(plan))
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
        this.#release([...released, ...this.#records.settled(plan, through)])
        // A seat's counters not written with the round go with the next snapshot, whatever befalls this node before
        // it: a mark kept only in memory was lost with a node killed before it, and the others then under-counted.
        for (const kvKey of due) this.#store.snapshotsDue.putSync(kvKey, 1)
      })
      this.#onShipped(through, [...bids.values()])
      if (batch.length === BATCH) this.#again = true
      else if (batch.reduce((rows, { changes }) => rows + changes.length, 0) >= LINGER_ROWS) lingerFrom = sent
    } while (this.#again)
  }
}
