import { isDeepStrictEqual } from 'node:util'
import { DeliverPolicy, KvWatchInclude, type ConsumerConfig, type ConsumerMessages, type JsMsg, type KvEntry } from 'nats'
import type { Key } from 'lmdb'
import type { Logger } from '../log.js'
import type { Change, ChangeLog } from '../store/changes.js'
import type { Store } from '../store/store.js'
import { SNAPSHOT_TABLES } from '../store/tables.js'
import { BOOK_STREAM, SIGNALS_STREAM, untilAnswered, type Engine } from './engine.js'
import { SNAPSHOT_MS } from './shipper.js'
import { MarkWaiters } from './mark-waiters.js'
import { APPLIED, appliedRevision } from './applied-revision.js'
import { Opens } from './opens.js'
import { bookRows } from './book-parts.js'
import { partitionOf } from './screen-partitions.js'
import { retryWithBackoff, within } from '../retry.js'
import { BOOK_BEHIND } from './readiness.js'
import { parseStateKey, stateKey, unpackValue } from './state-keys.js'

type ApplierWatch = Awaited<ReturnType<Engine['state']['watch']>> | undefined

/**
 * A stream of rows the applier follows in the stream's order (src/cluster/shipper.ts): the signals (FEIN, heartbeats)
 * and the book (bids and their settlement).
 */
interface Followed {
  stream: string
  /** meta key: the stream's last message this node applied, where it resumes after a restart. */
  meta: string
  /** Where a node that has applied none of it starts. */
  start: (engine: Engine) => Promise<Partial<ConsumerConfig>>
  /**
   * Whether a message holds this node's own rows, already written here in their order and skipped: the book's own bid
   * coming back after the spot that settled it had shipped would stand again until the settlement came too. Own means
   * this data directory's (its incarnation names its messages): a node that lost its disk reads back what it took.
   */
  own?: (m: JsMsg) => boolean
  /** A message's rows to apply here, unpacked when the applier writes them (which partitions are held may change until then). */
  rows: (data: Uint8Array) => Change[]
  messages?: ConsumerMessages
  lastChecked: number
  readonly opens: Opens
}

/**
 * What the applier writes, in the order it came: a state bucket entry, or one node's round of a followed stream (for
 * this node's own round, whose rows it holds already, the last of its changes the round carried).
 */
type Arrived = { entry: KvEntry } | { followed: Followed, seq: number, data?: Uint8Array, ownThrough?: number }

/** The last change a round carries, from its message id (`<incarnation>.<first>-<last>.<n>`, src/cluster/shipper.ts). */
function roundThrough (msgId: string): number | undefined {
  const through = Number(/\.\d+-(\d+)\.\d+$/.exec(msgId)?.[1])
  return Number.isSafeInteger(through) ? through : undefined
}

/** How long a starting node waits to have applied the book as it stood, before it serves what needs no book. */
const BOOK_CATCH_UP_MS = 30_000

/**
 * What a table's owner derives on this node from a row the engine delivered (the adslots order from a screen's rows),
 * called inside the applying transaction after the row is written, with the value it replaced (to undo what that
 * one derived: a removed subscription's place in its seat's list).
 */
export type AppliedHook = (table: string, key: Key, previous: unknown) => void

/** How long a partition's rebuild waits for the engine to answer, or for the book's next message, before it starts again. */
const REBUILD_WAIT_MS = 10_000

/** Rows a rebuild writes in one transaction. */
const REBUILD_BATCH = 512

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

/** A stream's newest message, and whether it holds any (a stream whose messages all aged out holds none). */
async function lastMessage (engine: Engine, stream: string): Promise<{ last: number, held: boolean }> {
  const { state } = await engine.jsm.streams.info(stream)
  return { last: state.last_seq, held: state.messages > 0 }
}

/**
 * Keeps this node's copy of the replicated tables current: watches the state bucket and writes every row change,
 * in the bucket's order, into local LMDB, where the routes read it as always (a cached table's generation moves, so
 * every hot thread's cache and resolved keys follow). Every node applies every change, its own included, so all
 * converge on the bucket's last value per row. A change that comes before this node's own unacknowledged change to the
 * same row, in the bucket's order, is skipped: that one comes later and wins, and applying the older one first would
 * briefly undo it here (a revoked key working again). One that comes after it is applied.
 *
 * The eventual tables (FEIN, heartbeats) arrive as signals, each node's rounds in the stream's order; the state
 * bucket holds snapshots of them, which a node applies only while it catches up at start, before it follows the
 * signals (from where it left off, or from two snapshot periods back when it has followed none). The book (stored bids
 * and the settlements that take them out) arrives the same way from its own stream, every node's rounds but this
 * node's own, and a node is ready only once it has applied the book as it stood when it started. Of the bids it
 * applies only those of the partitions whose logs it owns (hold), reading past the others unpacked; a partition it
 * comes to own is read from the stream's start before its spots are decided here (onServing). A node away longer than
 * the book stream keeps misses only bids that expired meanwhile, and their settlements; the rows that outlive the
 * stream (a seat's hourly counters) it reads from the state bucket's snapshot of them while it catches up.
 */
export class ChangeApplier {
  readonly #store: Store
  readonly #changes: ChangeLog
  readonly #log: Logger
  readonly #onApplied: AppliedHook
  #queue: Arrived[] = []
  /** Once the node follows the signals: the state bucket's eventual rows are then only older snapshots of them. */
  #following = false
  readonly #signals: Followed = {
    stream: SIGNALS_STREAM,
    meta: 'cluster:signals',
    // Two snapshots back from the newest signal, by the engine's clock: a node whose own clock runs ahead would start
    // past the signals it needs. A stream with none yet starts at sequence 1 (see the book's start below).
    start: async (engine) => {
      const { state } = await engine.jsm.streams.info(SIGNALS_STREAM)
      return state.messages === 0 ? { deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: 1 } : { deliver_policy: DeliverPolicy.StartTime, opt_start_time: new Date(Date.parse(state.last_ts) - 2 * SNAPSHOT_MS).toISOString() }
    },
    rows: (data) => unpackValue(data) as Change[],
    lastChecked: -1,
    opens: new Opens()
  }

  readonly #book: Followed
  /** The screen partitions whose bids this node applies: those whose logs it owns (src/cluster/partition-owners.ts). */
  readonly #held = new Set<number>()
  /**
   * Partitions taken on and still being read from the book's start, each with the rows the live book wrote since
   * (state keys): newer than anything the rebuild reads, which leaves them alone.
   */
  readonly #rebuilding = new Map<number, Set<string>>()
  readonly #onServing: (partition: number, serving: boolean) => void
  readonly #onForget: ForgetHook
  /** How many partitions the screens hash into (CLUSTER_PARTITIONS). */
  readonly #partitions: number
  /** A starting node waiting to have applied the book through the message that was newest when it asked. */
  readonly #bookApplying = new MarkWaiters()
  #scheduled = false
  #stopped = false
  #unknown = new Set<string>()
  /**
   * Rows whose latest change by this node, still waiting for its acknowledgement, has been seen in the bucket's order,
   * with that change's seq: whatever comes for them after it is newer, and applies.
   */
  readonly #landed = new Map<string, number>()
  /** Per followed stream, the last change of this node's own rounds seen in its order. */
  readonly #ownThrough = new Map<Followed, number>()
  #watch: ApplierWatch
  readonly #watchOpens = new Opens()
  /** The engine's answer to "which revision is last", while one is on its way, and the one asked after it. */
  #asking: Promise<number> | undefined
  #next: Promise<number> | undefined
  /** start() and requests waiting for this node to apply a revision (caughtUp). */
  readonly #applying = new MarkWaiters()
  /** Looks every WATCHDOG_MS for a watch that is behind the bucket and not moving. */
  #watchdog: NodeJS.Timeout | undefined
  #lastChecked = -1

  /**
   * incarnation: this data directory's name in the engine, which names its messages (its own come back, skipped).
   * onServing: a partition's bids are all here (true, once its rebuild is done), or no longer applied here;
   * onForget: takes the book's rows of a partition taken on out of this node's copy.
   */
  constructor (deps: { store: Store, changes: ChangeLog, log: Logger, incarnation: string, partitions: number, onApplied: AppliedHook, onServing: (partition: number, serving: boolean) => void, onForget: ForgetHook }) {
    this.#store = deps.store
    this.#changes = deps.changes
    this.#log = deps.log
    this.#onApplied = deps.onApplied
    this.#onServing = deps.onServing
    this.#onForget = deps.onForget
    this.#partitions = deps.partitions
    // A node that never followed the book reads all of it: the stream keeps bids only as long as they can win. (From
    // sequence 1, the first message kept or after: nats.js's ordered consumer with DeliverPolicy.All on an empty
    // stream never starts consuming.)
    this.#book = { stream: BOOK_STREAM, meta: 'cluster:book', start: async () => ({ deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: 1 }), own: (m) => m.headers?.get('Nats-Msg-Id').startsWith(`${deps.incarnation}.`) === true, rows: (data) => this.#bookRows(data), lastChecked: -1, opens: new Opens() }
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
    this.#store.write(() => this.#store.meta.removeSync(BOOK_BEHIND))
    const target = await untilAnswered('reading the state bucket', () => bucketRevision(engine), this.#log)
    const ready = target <= this.applied ? Promise.resolve(true) : this.#applying.wait(target)
    await untilAnswered('watching the state bucket', () => this.#open(engine), this.#log)
    this.#watchdog = setInterval(() => { this.#check(engine).catch(() => {}) }, WATCHDOG_MS)
    this.#watchdog.unref()
    await ready
    // The eventual rows the bucket held are applied: from here they come, newer, as signals.
    this.#following = true
    await untilAnswered('following the signals', () => this.#follow(engine, this.#signals), this.#log)
    // Bids the cluster took while this node was away, and the spots that settled them, before it decides a spot.
    const book = await untilAnswered('reading the book stream', () => lastMessage(engine, BOOK_STREAM), this.#log)
    const bookReady = !book.held || book.last <= this.#appliedOf(this.#book) ? Promise.resolve(true) : this.#bookApplying.wait(book.last, BOOK_CATCH_UP_MS)
    await untilAnswered('following the book', () => this.#follow(engine, this.#book), this.#log)
    if (await bookReady) return
    // It serves what needs no book (keys, reads, bookings), and says on /readyz that it is not ready until it has
    // applied the book as it stood: the front sends it no players (whose spots read the book) meanwhile.
    this.#log.warn('cluster: the book is not caught up; not ready until it is', { applied: this.#appliedOf(this.#book), newest: book.last })
    this.#store.write(() => this.#store.meta.putSync(BOOK_BEHIND, `applied the book through ${this.#appliedOf(this.#book)} of ${book.last}`))
    void this.#bookApplying.wait(book.last).then(() => {
      this.#store.write(() => this.#store.meta.removeSync(BOOK_BEHIND))
      this.#log.info('cluster: the book is caught up', { applied: this.#appliedOf(this.#book) })
    })
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
        if (followed.own?.(m) === true) this.#arrive({ followed, seq: m.seq, data: m.data, ownThrough: roundThrough(m.headers?.get('Nats-Msg-Id') ?? '') ?? 0 })
        else this.#arrive({ followed, seq: m.seq, data: m.data })
      }
    })().then(() => this.#ended(engine, followed, messages, 'ended'), (err: unknown) => this.#ended(engine, followed, messages, err))
  }

  /**
   * This node owns a partition of the screens now: from the next book message it applies the partition's bids, and it
   * reads the book from its start through the last message applied so far for the partition's rows that came before
   * (a row the live book has written since is newer, and left alone). Its spots are decided here once that is done
   * (onServing).
   */
  hold (engine: Engine, partition: number): void {
    if (this.#held.has(partition)) return
    this.#held.add(partition)
    const touched = new Set<string>()
    this.#rebuilding.set(partition, touched)
    const through = this.#appliedOf(this.#book)
    // What this node holds of the partition from before (bids it took, or a time it held it) may have been settled
    // since by another owner: the book says what is live, so the partition's rows start from it alone.
    this.#forget(partition)
    const current = (): boolean => !this.#stopped && this.#rebuilding.get(partition) === touched
    void retryWithBackoff(async () => {
      const head = await this.#rebuild(engine, partition, through, touched, current)
      // What the last owner shipped before this node took the partition over (a settlement) is applied before a spot
      // is decided here: the live book is followed through the stream's head as it stood once this node owned it.
      if (this.#appliedOf(this.#book) < head && !await this.#bookApplying.wait(head, REBUILD_WAIT_MS)) throw new Error(`the book is not applied through entry ${head} yet`)
    }, () => !current(), (err, retryInMs) => {
      this.#log.warn('cluster: reading a partition\'s bids from the book failed; trying again', { partition, retry_in_ms: retryInMs, error: err instanceof Error ? err.message : String(err) })
    }).then(() => {
      if (!current()) return
      this.#rebuilding.delete(partition)
      this.#onServing(partition, true)
      this.#log.info('cluster: a partition\'s bids are read from the book; its spots are decided here', { partition, through })
    })
  }

  /** Removes this node's rows of a partition's bids, but for those it changed and has not shipped (they are newer). */
  #forget (partition: number): void {
    this.#store.write(() => this.#changes.applying(() => {
      const waiting = this.#changes.pendingKeys(stateKey)
      this.#onForget((screenId) => partitionOf(screenId, this.#partitions) === partition, (table, key) => waiting.has(stateKey(table, key)))
    }))
  }

  /** This node no longer owns the partition: its bids are read past, and its spots decided elsewhere. */
  release (partition: number): void {
    if (!this.#held.delete(partition)) return
    this.#rebuilding.delete(partition)
    this.#onServing(partition, false)
  }

  /** Notes this node's own rows of the partitions being read from the book's start, which the reading leaves alone. */
  #touchOwn (data: Uint8Array): void {
    bookRows(data, this.#partitions, (p) => this.#rebuilding.has(p), (p, rows) => {
      const touched = this.#rebuilding.get(p)
      if (touched !== undefined) for (const row of rows) touched.add(stateKey(row[0], row[1]))
    })
  }

  /** The book's rows of a message that this node applies: its held partitions' bids, and every node's rows. */
  #bookRows (data: Uint8Array): Change[] {
    const out: Change[] = []
    bookRows(data, this.#partitions, (p) => this.#held.has(p), (p, rows) => {
      const touched = this.#rebuilding.get(p)
      for (const row of rows) {
        out.push(row)
        touched?.add(stateKey(row[0], row[1]))
      }
    })
    return out
  }

  /**
   * Applies a partition's rows of the book's messages from the first kept through `through`, in order, leaving alone
   * the rows the live book wrote since it was taken on (touched) and those this node changed and has not shipped. A
   * try that fails is run again from the start: the same rows in the same order end the same. Resolves with the
   * stream's last entry when it began.
   */
  async #rebuild (engine: Engine, partition: number, through: number, touched: Set<string>, current: () => boolean): Promise<number> {
    const { state } = await within(REBUILD_WAIT_MS, 'reading the book stream', engine.jsm.streams.info(BOOK_STREAM))
    if (state.messages === 0 || state.first_seq > through) return state.last_seq
    const consumer = await within(REBUILD_WAIT_MS, 'opening the book', engine.js.consumers.get(BOOK_STREAM, { deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: state.first_seq }))
    const messages = await within(REBUILD_WAIT_MS, 'opening the book', consumer.consume())
    let rows: Change[] = []
    const write = (): void => {
      const batch = rows
      rows = []
      if (batch.length === 0 || !current()) return
      this.#store.write(() => this.#changes.applying(() => {
        const waiting = this.#changes.pendingKeys(stateKey)
        for (const [table, key, value] of batch) {
          const kvKey = stateKey(table, key)
          if (!touched.has(kvKey) && !waiting.has(kvKey)) this.#apply(table, key, value)
        }
      }))
    }
    // A consumer can stall after a member's loss: one that delivers nothing for a while is given up on, and the try
    // runs again.
    let heard = performance.now()
    const stall = setInterval(() => { if (performance.now() - heard > REBUILD_WAIT_MS) messages.stop() }, REBUILD_WAIT_MS / 4)
    let reached = false
    try {
      for await (const m of messages) {
        heard = performance.now()
        if (!current()) return state.last_seq
        if (m.seq <= through) bookRows(m.data, this.#partitions, (p) => p === partition, (p, r) => { if (p === partition) rows.push(...r) })
        if (rows.length >= REBUILD_BATCH) write()
        if (m.seq >= through) {
          reached = true
          break
        }
      }
    } finally {
      clearInterval(stall)
      messages.stop()
    }
    if (!reached) throw new Error(`the book stopped arriving before entry ${through}`)
    write()
    return state.last_seq
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
    // opening one can wait without end (opens.ts): given up on and opened again.
    for (const followed of [this.#signals, this.#book]) {
      if (followed.opens.pending) {
        if (!this.#stopped && followed.opens.overdue()) this.#refollow(engine, followed, 'opening its consumer did not finish')
        continue
      }
      if (followed.messages === undefined) continue
      const { last } = await lastMessage(engine, followed.stream)
      const at = this.#appliedOf(followed)
      if (last > at && at === followed.lastChecked && !this.#stopped) {
        this.#log.warn('cluster: a followed stream is behind and not moving; following it again', { stream: followed.stream, applied: at, newest: last })
        followed.messages.stop()
      }
      followed.lastChecked = at
    }
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
    const revision = await this.#question(engine)
    return this.applied >= revision || await this.#applying.wait(revision, timeoutMs)
  }

  #question (engine: Engine): Promise<number> {
    if (this.#asking === undefined) return this.#ask(engine)
    this.#next ??= this.#asking.catch(() => 0).then(() => {
      this.#next = undefined
      return this.#ask(engine)
    })
    return this.#next
  }

  #ask (engine: Engine): Promise<number> {
    const asking = this.#asking = bucketRevision(engine).finally(() => { if (this.#asking === asking) this.#asking = undefined })
    return asking
  }

  stop (): void {
    this.#stopped = true
    clearInterval(this.#watchdog)
    this.#watch?.stop()
    this.#signals.messages?.stop()
    this.#book.messages?.stop()
  }

  #flush (): void {
    this.#scheduled = false
    if (this.#queue.length === 0) return
    const arrived = this.#queue
    this.#queue = []
    let revision: number | undefined
    const streams = new Map<Followed, number>()
    this.#store.write(() => this.#changes.applying(() => {
      // Read once a flush, and only when it has rows to write: a busy node's own book rounds come back with none, and
      // its waiting changes hold every bid it has not shipped yet.
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
      const waitsInStream = (followed: Followed, kvKey: string): boolean => {
        const w = pending()
        const seq = w.size === 0 ? undefined : w.get(kvKey)
        return seq !== undefined && seq > (this.#ownThrough.get(followed) ?? 0)
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
          if (this.#following && SNAPSHOT_TABLES.has(table)) continue
          const value = entry.operation === 'PUT' ? unpackValue(entry.value) : undefined
          if (!waitsInBucket(entry.key, table, key, value)) this.#apply(table, key, value)
        } else {
          streams.set(item.followed, item.seq)
          if (item.ownThrough !== undefined) {
            this.#ownThrough.set(item.followed, Math.max(this.#ownThrough.get(item.followed) ?? 0, item.ownThrough))
            // This node's own rows are written here already; a partition being read from the book's start must still
            // leave them alone, as newer than what it reads.
            if (item.data !== undefined && this.#rebuilding.size > 0 && item.followed === this.#book) this.#touchOwn(item.data)
            continue
          }
          if (item.data === undefined) continue
          for (const [table, key, value] of item.followed.rows(item.data)) if (!waitsInStream(item.followed, stateKey(table, key))) this.#apply(table, key, value)
        }
      }
      if (revision !== undefined) this.#store.meta.putSync(APPLIED, revision)
      for (const [followed, seq] of streams) this.#store.meta.putSync(followed.meta, seq)
    }))
    if (revision !== undefined) this.#applying.reached(revision)
    const book = streams.get(this.#book)
    if (book !== undefined) this.#bookApplying.reached(book)
  }

  /**
   * Writes one row another node changed (value undefined: removed), unless this node holds it already; the caller has
   * left out rows this node holds a newer change to, waiting to ship.
   */
  #apply (table: string, key: Key, value: unknown): void {
    const target = this.#store.replicated(table)
    if (target === undefined) {
      // A newer node replicates a table this one does not know yet: its routes would not read it either.
      if (!this.#unknown.has(table)) this.#log.warn('cluster: a change to a table this node does not replicate', { table })
      this.#unknown.add(table)
      return
    }
    // This node's own change coming back, or one it already holds: nothing to write or derive again.
    const previous = target.get(key)
    if (isDeepStrictEqual(previous, value)) return
    if (value !== undefined) target.putSync(key, value)
    else target.removeSync(key)
    this.#onApplied(table, key, previous)
  }
}
