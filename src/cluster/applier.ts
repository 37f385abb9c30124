import { isDeepStrictEqual } from 'node:util'
import { DeliverPolicy, KvWatchInclude, type ConsumerConfig, type ConsumerMessages, type KvEntry } from 'nats'
import type { Key } from 'lmdb'
import type { Logger } from '../log.js'
import type { Change, ChangeLog } from '../store/changes.js'
import type { Store } from '../store/store.js'
import { BOOK_TABLES, SNAPSHOT_TABLES } from '../store/tables.js'
import { SIGNALS_STREAM, untilAnswered, type Engine } from './engine.js'
import { SNAPSHOT_MS } from './shipper.js'
import { MarkWaiters } from './mark-waiters.js'
import { APPLIED, appliedRevision } from './applied-revision.js'
import { Opens } from './opens.js'
import { PartitionBooks, type BookArrival, type PartitionBook } from './partition-books.js'
import { partitionOf } from './screen-partitions.js'
import { parseStateKey, stateKey, unpackValue } from './state-keys.js'
import { writeRow, type AppliedHook } from './row-writes.js'
import type { FencedCommits } from './fenced-commits.js'
import { RowVersions } from './row-versions.js'
import { SharedQuestion } from './shared-question.js'

type ApplierWatch = Awaited<ReturnType<Engine['state']['watch']>> | undefined

/** A stream of rows the applier follows in the stream's order (src/cluster/shipper.ts): the signals (FEIN, heartbeats). */
interface Followed {
  stream: string
  /** meta key: the stream's last message this node applied, where it resumes after a restart. */
  meta: string
  /** Where a node that has applied none of it starts. */
  start: (engine: Engine) => Promise<Partial<ConsumerConfig>>
  messages?: ConsumerMessages
  lastChecked: number
  readonly opens: Opens
}

/**
 * What the applier writes, in the order it came: a state bucket entry, one node's round of the signals, or a message
 * of a partition's bids this node holds.
 */
type Arrived = { entry: KvEntry } | { followed: Followed, seq: number, data: Uint8Array } | BookArrival


/**
 * What the book's owner (src/bidding/book.ts) takes out of this node's copy when it takes a partition on, before the
 * partition's rows are read from the engine: the rows on the screens `belongs` names, but for those `keep` names.
 */
export type ForgetHook = (belongs: (screenId: string) => boolean, keep: (table: string, key: Key) => boolean) => void

/** How often a node looks whether its watch of the state bucket has stalled. */
const WATCHDOG_MS = 2000

/** The bucket's newest revision, which is the last value of its row: a watch delivers it whatever it skips. */
async function bucketRevision (engine: Engine): Promise<number> {
  return (await engine.state.status()).streamInfo.state.last_seq
}

/** A stream's newest message. */
async function lastMessage (engine: Engine, stream: string): Promise<number> {
  return (await engine.jsm.streams.info(stream)).state.last_seq
}

/**
 * Keeps this node's copy of the replicated tables current: watches the state bucket and writes every row change,
 * in the bucket's order, into local LMDB, where the routes read it as always (a cached table's generation moves, so
 * every hot thread's cache and resolved keys follow). Every node applies every change, its own included, so all
 * converge on the bucket's last value per row. A change that comes before this node's own unacknowledged change to the
 * same row, in the bucket's order, is skipped: that one comes later and wins, and applying the older one first would
 * briefly undo it here (a revoked key working again). One that comes after it is applied. A row written under a record's
 * lock comes stamped with its place in the names' log, and a copy of it landing late, after a newer value, is skipped
 * and put right in the bucket (row-versions.ts): every node converges on the newest value, not the last landed.
 *
 * The eventual tables (FEIN, heartbeats) arrive as signals, each node's rounds in the stream's order; the state
 * bucket holds snapshots of them, which a node applies only while it catches up at start, before it follows the
 * signals (from where it left off, or from two snapshot periods back when it has followed none). The bids arrive from
 * the book stream, a partition's on a subject of its own: a node consumes only the partitions whose logs it owns
 * (hold, src/cluster/partition-books.ts), each read from the stream's start before its spots are decided here
 * (onServing). A seat's counters, written by each node to its own rows, reach the others through the state bucket
 * (src/cluster/shipper.ts, #snapshotBook).
 */
export class ChangeApplier {
  readonly #store: Store
  readonly #changes: ChangeLog
  readonly #log: Logger
  readonly #onApplied: AppliedHook
  /** The rows the names' log decides: the state bucket's value of one is older, or a refused writer's. */
  readonly #fenced: FencedCommits
  /** The versions of rows that come stamped: a late copy is older than what this node holds. */
  readonly #versions: RowVersions
  /** Puts a row's newer value back in the state bucket, where an older one landed last (ChangeShipper.repair). */
  readonly #repair: (kvKey: string) => void
  #queue: Arrived[] = []
  /** Once the node follows the signals: the state bucket's eventual rows are then only older snapshots of them. */
  #following = false
  readonly #signals: Followed = {
    stream: SIGNALS_STREAM,
    meta: 'cluster:signals',
    // Two snapshots back from the newest signal, by the engine's clock: a node whose own clock runs ahead would start
    // past the signals it needs. A stream with none yet starts at sequence 1 (nats.js's ordered consumer with
    // DeliverPolicy.All on an empty stream never starts consuming).
    start: async (engine) => {
      const { state } = await engine.jsm.streams.info(SIGNALS_STREAM)
      return state.messages === 0 ? { deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: 1 } : { deliver_policy: DeliverPolicy.StartTime, opt_start_time: new Date(Date.parse(state.last_ts) - 2 * SNAPSHOT_MS).toISOString() }
    },
    lastChecked: -1,
    opens: new Opens()
  }

  /** The partitions whose bids this node applies: those whose logs it owns (src/cluster/partition-owners.ts). */
  readonly #books: PartitionBooks
  readonly #onServing: (partition: number, serving: boolean) => void
  readonly #onForget: ForgetHook
  /** How many partitions the screens hash into (CLUSTER_PARTITIONS). */
  readonly #partitions: number
  /** This node's id, the last part of the key of each row of a seat's counters it writes (src/bidding/records.ts). */
  readonly #node: string
  #scheduled = false
  #stopped = false
  #unknown = new Set<string>()
  /**
   * Rows whose latest change by this node, still waiting for its acknowledgement, has been seen in the bucket's order,
   * with that change's seq: whatever comes for them after it is newer, and applies.
   */
  readonly #landed = new Map<string, number>()
  #watch: ApplierWatch
  readonly #watchOpens = new Opens()
  /** "Which revision is last", asked of the engine once for the callers catching up at the same moment. */
  #revisions: SharedQuestion<number> | undefined
  /** start() and requests waiting for this node to apply a revision (caughtUp). */
  readonly #applying = new MarkWaiters()
  /** Looks every WATCHDOG_MS for a watch that is behind the bucket and not moving. */
  #watchdog: NodeJS.Timeout | undefined
  #lastChecked = -1

  /**
   * incarnation: this data directory's name in the engine, which names its rounds (its own come back).
   * onServing: a partition's bids are all here (true, once its book is read), or no longer applied here;
   * onForget: takes the book's rows of a partition taken on out of this node's copy.
   */
  constructor (deps: { store: Store, changes: ChangeLog, log: Logger, node: string, incarnation: string, partitions: number, onApplied: AppliedHook, onServing: (partition: number, serving: boolean) => void, onForget: ForgetHook, fenced: FencedCommits, repair: (kvKey: string) => void }) {
    this.#store = deps.store
    this.#changes = deps.changes
    this.#log = deps.log
    this.#onApplied = deps.onApplied
    this.#fenced = deps.fenced
    this.#versions = new RowVersions(deps.store)
    this.#repair = deps.repair
    this.#onServing = deps.onServing
    this.#onForget = deps.onForget
    this.#partitions = deps.partitions
    this.#node = deps.node
    this.#books = new PartitionBooks({ incarnation: deps.incarnation, log: deps.log, arrive: (arrival) => this.#arrive(arrival) })
  }

  /** The bucket revision this node has applied through. */
  get applied (): number {
    return appliedRevision(this.#store)
  }

  /**
   * Starts watching; resolves once every change the bucket held when the watch began is applied, so a node that was
   * away serves nothing older than what the cluster acknowledged before it came back.
   */
  async start (engine: Engine): Promise<void> {
    const target = await untilAnswered('reading the state bucket', () => bucketRevision(engine), this.#log)
    const ready = target <= this.applied ? Promise.resolve(true) : this.#applying.wait(target)
    await untilAnswered('watching the state bucket', () => this.#open(engine), this.#log)
    this.#watchdog = setInterval(() => { this.#check(engine).catch(() => {}) }, WATCHDOG_MS)
    this.#watchdog.unref()
    await ready
    // The eventual rows the bucket held are applied: from here they come, newer, as signals.
    this.#following = true
    await untilAnswered('following the signals', () => this.#follow(engine, this.#signals), this.#log)
  }

  /**
   * Follows a stream from the message after the last one applied, or, for a node that has applied none of it, from
   * where the stream says (the signals: two snapshot periods ago, every row changed since its last snapshot in the
   * state bucket).
   */
  async #follow (engine: Engine, followed: Followed): Promise<void> {
    const current = followed.opens.begin()
    const from = this.#appliedOf(followed)
    const consumer = await engine.js.consumers.get(followed.stream, from > 0 ? { deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: from + 1 } : await followed.start(engine))
    const messages = await consumer.consume()
    // Given up on while it opened (the watchdog opened another): the later one follows the stream.
    if (!current()) {
      messages.stop()
      return
    }
    followed.messages = messages
    followed.opens.opened()
    void (async () => {
      for await (const m of messages) {
        if (followed.messages !== messages) break
        this.#arrive({ followed, seq: m.seq, data: m.data })
      }
    })().then(() => this.#ended(engine, followed, messages, 'ended'), (err: unknown) => this.#ended(engine, followed, messages, err))
  }

  /**
   * This node owns a partition of the screens now: what it holds of the partition from before (bids it took, or a time
   * it held it) is dropped, but for rows it changed and has not shipped, and the partition's bids are read from the
   * book stream's start, in order, and followed on (src/cluster/partition-books.ts). Its spots are decided here once
   * every message the stream held for it is applied (onServing): whatever the owner before shipped, a settlement's
   * put-back included, is in before a spot is decided here.
   */
  hold (engine: Engine, partition: number): void {
    if (this.#stopped || this.#books.holds(partition)) return
    this.#forget(partition)
    this.#books.hold(engine, partition)
  }

  /** Removes this node's rows of a partition's bids, but for those it changed and has not shipped (they are newer). */
  #forget (partition: number): void {
    this.#store.write(() => this.#changes.applying(() => {
      const waiting = this.#changes.pendingKeys(stateKey)
      this.#onForget((screenId) => partitionOf(screenId, this.#partitions) === partition, (table, key) => waiting.has(stateKey(table, key)))
    }))
  }

  /**
   * The engine holds these bids of this node's (each with its change's seq): those of partitions it holds are newer
   * than anything before them in their partition's order until they come back in it, even once no longer waiting to
   * ship (a round in flight when the partition was taken on lands past its head, and is skipped as this node's own:
   * the rows before it must not undo it).
   */
  landing (bids: Array<[Change, number]>): void {
    for (const [[table, key], seq] of bids) {
      const book = this.#books.book(partitionOf((key as [string])[0], this.#partitions))
      if (book !== undefined && seq > book.ownThrough) book.unreturned.set(stateKey(table, key), seq)
    }
  }

  /** This node no longer owns the partition: its bids are not applied here, and its spots are decided elsewhere. */
  release (partition: number): void {
    if (this.#books.release(partition)) this.#onServing(partition, false)
  }

  /** A consumer ended: followed again if it is still the stream's (not one given up on). */
  #ended (engine: Engine, followed: Followed, messages: ConsumerMessages, why: unknown): void {
    if (followed.messages === messages) this.#refollow(engine, followed, why)
  }

  #refollow (engine: Engine, followed: Followed, why: unknown): void {
    if (this.#stopped) return
    this.#flush()
    this.#log.warn('cluster: a followed stream ended; following it again from the last applied', { stream: followed.stream, error: why instanceof Error ? why.message : String(why) })
    setTimeout(() => {
      if (this.#stopped) return
      // A failure of an open given up on meanwhile is no news: the later open follows the stream.
      this.#follow(engine, followed).catch((err: unknown) => { if (followed.opens.pending) this.#refollow(engine, followed, err) })
    }, 500)
  }

  #arrive (item: Arrived): void {
    this.#queue.push(item)
    if (!this.#scheduled) {
      this.#scheduled = true
      setImmediate(() => this.#flush())
    }
  }

  /**
   * A watch is a JetStream ordered consumer, which re-creates itself when its heartbeats stop; after a stream leader's
   * loss that took over 20 s in one run of five here. A watch that is behind the bucket and applied nothing since the
   * last look is stopped, and opened again from the last revision applied (#reopen).
   */
  async #check (engine: Engine): Promise<void> {
    if (!this.#stopped && this.#watchOpens.overdue()) this.#reopen(engine, 'opening the watch did not finish')
    const last = await bucketRevision(engine)
    const applied = this.applied
    if (last > applied && applied === this.#lastChecked && !this.#stopped) {
      this.#log.warn('cluster: the state watch is behind and not moving; watching again', { applied_revision: applied, bucket_revision: last })
      this.#watch?.stop()
    }
    this.#lastChecked = applied
    if (!this.#following) return
    // A followed stream's consumer can stall the same way after a member's loss (seen once in a full test run), and
    // opening one can wait without end (opens.ts): given up on and opened again. So can a partition's book.
    await this.#books.check(engine)
    const followed = this.#signals
    if (followed.opens.pending) {
      if (!this.#stopped && followed.opens.overdue()) this.#refollow(engine, followed, 'opening its consumer did not finish')
      return
    }
    if (followed.messages === undefined) return
    const newest = await lastMessage(engine, followed.stream)
    const at = this.#appliedOf(followed)
    if (newest > at && at === followed.lastChecked && !this.#stopped) {
      this.#log.warn('cluster: a followed stream is behind and not moving; following it again', { stream: followed.stream, applied: at, newest })
      followed.messages.stop()
    }
    followed.lastChecked = at
  }

  #appliedOf (followed: Followed): number {
    return (this.#store.meta.get(followed.meta) as number | undefined) ?? 0
  }

  async #open (engine: Engine): Promise<void> {
    const current = this.#watchOpens.begin()
    const from = this.applied
    // A node seen before reads what changed since; a new node reads the current rows.
    const watch = await engine.state.watch(from > 0 ? { include: KvWatchInclude.AllHistory, resumeFromRevision: from + 1 } : { include: KvWatchInclude.LastValue })
    // Given up on while it opened (the watchdog opened another): the later one is the node's watch.
    if (!current()) {
      watch.stop()
      return
    }
    this.#watch = watch
    this.#watchOpens.opened()
    void (async () => {
      for await (const entry of watch) {
        if (this.#watch !== watch) break
        this.#arrive({ entry })
      }
    })().then(() => this.#watchEnded(engine, watch, 'ended'), (err: unknown) => this.#watchEnded(engine, watch, err))
  }

  /** A watch ended: opened again if it is still the node's (not one given up on). */
  #watchEnded (engine: Engine, watch: NonNullable<ApplierWatch>, why: unknown): void {
    if (this.#watch === watch) this.#reopen(engine, why)
  }

  /**
   * The watch ended (its consumer lost with an engine member, a connection that did not come back in time): watch
   * again from the last revision applied, or this node would serve rows that stopped changing.
   */
  #reopen (engine: Engine, why: unknown): void {
    if (this.#stopped) return
    this.#flush()
    this.#log.warn('cluster: the state watch ended; watching again from the last applied revision', { error: why instanceof Error ? why.message : String(why), applied_revision: this.applied })
    setTimeout(() => {
      if (this.#stopped) return
      // A failure of an open given up on meanwhile is no news: the later open is the node's watch.
      this.#open(engine).catch((err: unknown) => { if (this.#watchOpens.pending) this.#reopen(engine, err) })
    }, 500)
  }

  /**
   * Resolves true once this node has applied the bucket through the revision it holds now, false when timeoutMs
   * passes first. Callers waiting at the same moment share a question to the engine, but never one asked before they
   * came (its answer could miss what was acknowledged just before they asked): they share the next.
   */
  async caughtUp (engine: Engine, timeoutMs: number): Promise<boolean> {
    this.#revisions ??= new SharedQuestion(async () => await bucketRevision(engine))
    const revision = await this.#revisions.answer()
    return this.applied >= revision || await this.#applying.wait(revision, timeoutMs)
  }

  stop (): void {
    this.#stopped = true
    clearInterval(this.#watchdog)
    this.#watch?.stop()
    this.#signals.messages?.stop()
    this.#books.stop()
  }

  #flush (): void {
    this.#scheduled = false
    if (this.#queue.length === 0) return
    const arrived = this.#queue
    this.#queue = []
    let revision: number | undefined
    const streams = new Map<Followed, number>()
    const served: PartitionBook[] = []
    const repairs: string[] = []
    this.#store.write(() => this.#changes.applying(() => {
      // Read once a flush, and only when it has rows to write: a busy node's own rounds come back, and its waiting
      // changes hold every bid it has not shipped yet.
      let waiting: Map<string, number> | undefined
      const pending = (): Map<string, number> => {
        if (waiting === undefined) {
          waiting = this.#changes.pendingKeys(stateKey)
          for (const [kvKey, seq] of this.#landed) if (waiting.get(kvKey) !== seq) this.#landed.delete(kvKey)
        }
        return waiting
      }
      // A change to a row this node changed too, and has not heard acknowledged, is skipped while it comes before this
      // node's change in the engine's order (that one comes later and wins; applying the older one would undo it here
      // for a moment: a revoked key working again), and applied once it comes after (it is newer: skipping it would
      // leave this node on its own value for good, where every other node holds the newer one).
      const waitsInBucket = (kvKey: string, table: string, key: Key, value: unknown): boolean => {
        const w = pending()
        const seq = w.size === 0 ? undefined : w.get(kvKey)
        if (seq === undefined || this.#landed.get(kvKey) === seq) return false
        // This node's latest value of the row, come back in the bucket's order: it has landed.
        if (isDeepStrictEqual(this.#store.replicated(table)?.get(key), value)) this.#landed.set(kvKey, seq)
        return true
      }
      // The same in a stream: this node's change has landed once a round of its own carrying it has come back.
      const waitsInStream = (kvKey: string, ownThrough: number, unreturned?: Map<string, number>): boolean => {
        const w = pending()
        const seq = (w.size === 0 ? undefined : w.get(kvKey)) ?? unreturned?.get(kvKey)
        return seq !== undefined && seq > ownThrough
      }
      // A change at or below the revision applied already is one a watch opened again delivered twice: applied again
      // after a newer one, it would put an older value back.
      let through = this.applied
      for (const item of arrived) {
        if ('entry' in item) {
          const { entry } = item
          if (entry.revision <= through) continue
          revision = through = entry.revision
          const { table, key } = parseStateKey(entry.key)
          if (this.#snapshotOnly(table, key) || this.#fenced.decides(entry.key)) continue
          const admitted = this.#versions.admit(entry.key, entry.operation === 'PUT' ? entry.value : undefined, entry.revision)
          if (admitted === 'held') continue
          if (admitted === 'older') {
            // A late copy: put right in the bucket, unless this node's own change to the row is on its way there.
            if (!pending().has(entry.key)) {
              this.#store.repairsDue.putSync(entry.key, entry.revision)
              repairs.push(entry.key)
            }
            continue
          }
          if (!waitsInBucket(entry.key, table, key, admitted.value)) this.#apply(table, key, admitted.value)
        } else if ('followed' in item) {
          streams.set(item.followed, item.seq)
          for (const [table, key, value] of unpackValue(item.data) as Change[]) if (!waitsInStream(stateKey(table, key), 0)) this.#apply(table, key, value)
        } else {
          const { book } = item
          // Released (or released and taken on again) since it came, or delivered again by a consumer opened again.
          if (!this.#books.current(book)) continue
          if ('data' in item) {
            if (item.seq <= book.at) continue
            if (item.through > book.ownThrough) {
              book.ownThrough = item.through
              for (const [kvKey, seq] of book.unreturned) if (seq <= book.ownThrough) book.unreturned.delete(kvKey)
            }
            // This node's own rounds since the partition was taken on are rows it wrote here itself, in their order, and
            // perhaps changed since without shipping (a spot's bids taken out): applied, they would stand again. Its
            // rounds from before are read like any other node's: it dropped its copy of the partition on taking it on.
            if (!item.own || item.seq <= book.head!) {
              for (const [table, key, value] of unpackValue(item.data) as Change[]) if (!waitsInStream(stateKey(table, key), book.ownThrough, book.unreturned)) this.#apply(table, key, value)
            }
            book.at = item.seq
            if (!book.serving && item.seq >= book.head!) served.push(book)
          } else if (!book.serving) {
            served.push(book)
          }
        }
      }
      if (revision !== undefined) this.#store.meta.putSync(APPLIED, revision)
      for (const [followed, seq] of streams) this.#store.meta.putSync(followed.meta, seq)
    }))
    if (revision !== undefined) this.#applying.reached(revision)
    for (const kvKey of repairs) this.#repair(kvKey)
    for (const book of served) {
      if (book.serving || !this.#books.current(book)) continue
      book.serving = true
      this.#onServing(book.partition, true)
      this.#log.info('cluster: a partition\'s bids are read from the book; its spots are decided here', { partition: book.partition, through: book.at })
    }
  }

  /**
   * Whether a row of the state bucket is one this node has newer, the bucket holding a snapshot of it: an eventual
   * table's row once the node follows the signals (which bring them), and a row of this node's own counters (only it
   * writes them) unless it has none, having lost its disk.
   */
  #snapshotOnly (table: string, key: Key): boolean {
    if (!SNAPSHOT_TABLES.has(table)) return false
    if (!BOOK_TABLES.has(table)) return this.#following
    return Array.isArray(key) && key[key.length - 1] === this.#node && this.#store.replicated(table)?.get(key) !== undefined
  }

  /**
   * Writes one row another node changed (value undefined: removed), unless this node holds it already; the caller has
   * left out rows this node holds a newer change to, waiting to ship.
   */
  #apply (table: string, key: Key, value: unknown): void {
    // A newer node replicates a table this one does not know yet: its routes would not read it either.
    if (writeRow(this.#store, this.#onApplied, table, key, value) || this.#unknown.has(table)) return
    this.#log.warn('cluster: a change to a table this node does not replicate', { table })
    this.#unknown.add(table)
  }
}
