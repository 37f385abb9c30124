import { isDeepStrictEqual } from 'node:util'
import { DeliverPolicy, KvWatchInclude, type ConsumerMessages, type KvEntry } from 'nats'
import type { Key } from 'lmdb'
import type { Logger } from '../log.js'
import type { Change, ChangeLog } from '../store/changes.js'
import { EVENTUAL_TABLES, type Store } from '../store/store.js'
import { SIGNALS_STREAM, untilAnswered, type Engine } from './engine.js'
import { SNAPSHOT_MS } from './shipper.js'
import { MarkWaiters } from './mark-waiters.js'
import { parseStateKey, stateKey, unpackValue } from './state-keys.js'

/** meta key: the state bucket's last revision this node applied, where it resumes after a restart. */
const APPLIED = 'cluster:applied'

/** meta key: the signals stream's last message this node applied (src/cluster/shipper.ts). */
const SIGNALS = 'cluster:signals'

/** What the applier writes, in the order it came: a state bucket entry, or one node's round of signals. */
type Arrived = { entry: KvEntry } | { seq: number, rows: Change[] }

/**
 * What a table's owner derives on this node from a row the engine delivered (the adslots order from a screen's rows),
 * called inside the applying transaction after the row is written, with the value it replaced (to undo what that
 * one derived: a removed subscription's place in its seat's list).
 */
export type AppliedHook = (table: string, key: Key, previous: unknown) => void

/** How often a node looks whether its watch of the state bucket has stalled. */
const WATCHDOG_MS = 2000

/** The state bucket's revision this node has applied through (/readyz shows it). */
export function appliedRevision (store: Pick<Store, 'meta'>): number {
  return (store.meta.get(APPLIED) as number | undefined) ?? 0
}

/** The bucket's newest revision, which is the last value of its row: a watch delivers it whatever it skips. */
async function bucketRevision (engine: Engine): Promise<number> {
  return (await engine.state.status()).streamInfo.state.last_seq
}

/** The signals stream's newest message. */
async function lastSignal (engine: Engine): Promise<number> {
  return (await engine.jsm.streams.info(SIGNALS_STREAM)).state.last_seq
}

/**
 * Keeps this node's copy of the replicated tables current: watches the state bucket and writes every row change,
 * in the bucket's order, into local LMDB, where the routes read it as always (a cached table's generation moves, so
 * every hot thread's cache and resolved keys follow). Every node applies every change, its own included, so all
 * converge on the bucket's last value per row. A change is skipped while this node has a newer one to the same row
 * waiting to ship: that one will come later in the bucket's order and win, and applying the older one first would
 * briefly undo it here (a revoked key working again).
 *
 * The eventual tables (FEIN, heartbeats) arrive as signals, each node's rounds in the stream's order; the state
 * bucket holds snapshots of them, which a node applies only while it catches up at start, before it follows the
 * signals (from where it left off, or from two snapshot periods back when it has followed none).
 */
export class ChangeApplier {
  readonly #store: Store
  readonly #changes: ChangeLog
  readonly #log: Logger
  readonly #onApplied: AppliedHook
  #queue: Arrived[] = []
  /** Once the node follows the signals: the state bucket's eventual rows are then only older snapshots of them. */
  #following = false
  #signals: ConsumerMessages | undefined
  #scheduled = false
  #stopped = false
  #unknown = new Set<string>()
  #watch: Awaited<ReturnType<Engine['state']['watch']>> | undefined
  /** The engine's answer to "which revision is last", while one is on its way, and the one asked after it. */
  #asking: Promise<number> | undefined
  #next: Promise<number> | undefined
  /** start() and requests waiting for this node to apply a revision (caughtUp). */
  readonly #applying = new MarkWaiters()
  /** Looks every WATCHDOG_MS for a watch that is behind the bucket and not moving. */
  #watchdog: NodeJS.Timeout | undefined
  #lastChecked = -1
  #lastSignalChecked = -1

  constructor (deps: { store: Store, changes: ChangeLog, log: Logger, onApplied: AppliedHook }) {
    this.#store = deps.store
    this.#changes = deps.changes
    this.#log = deps.log
    this.#onApplied = deps.onApplied
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
    await untilAnswered('following the signals', () => this.#follow(engine), this.#log)
  }

  /**
   * Follows the signals stream: from the message after the last one applied, or, for a node that has applied none,
   * from two snapshot periods ago (every row changed since its last snapshot in the state bucket).
   */
  async #follow (engine: Engine): Promise<void> {
    const from = this.#signalApplied
    const consumer = await engine.js.consumers.get(SIGNALS_STREAM, from > 0
      ? { deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: from + 1 }
      : { deliver_policy: DeliverPolicy.StartTime, opt_start_time: new Date(Date.now() - 2 * SNAPSHOT_MS).toISOString() })
    const messages = this.#signals = await consumer.consume()
    void (async () => {
      for await (const m of messages) this.#arrive({ seq: m.seq, rows: unpackValue(m.data) as Change[] })
    })().then(() => this.#refollow(engine, 'ended'), (err: unknown) => this.#refollow(engine, err))
  }

  #refollow (engine: Engine, why: unknown): void {
    if (this.#stopped) return
    this.#flush()
    this.#log.warn('cluster: the signals ended; following them again from the last applied', { error: why instanceof Error ? why.message : String(why) })
    setTimeout(() => {
      if (this.#stopped) return
      this.#follow(engine).catch((err: unknown) => this.#refollow(engine, err))
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
    const last = await bucketRevision(engine)
    const applied = this.applied
    if (last > applied && applied === this.#lastChecked && !this.#stopped) {
      this.#log.warn('cluster: the state watch is behind and not moving; watching again', { applied_revision: applied, bucket_revision: last })
      this.#watch?.stop()
    }
    this.#lastChecked = applied
    if (!this.#following) return
    // The signals' consumer can stall the same way after a member's loss (seen once in a full test run).
    const newest = await lastSignal(engine)
    const signal = this.#signalApplied
    if (newest > signal && signal === this.#lastSignalChecked && !this.#stopped) {
      this.#log.warn('cluster: the signals are behind and not moving; following them again', { applied: signal, newest })
      this.#signals?.stop()
    }
    this.#lastSignalChecked = signal
  }

  get #signalApplied (): number {
    return (this.#store.meta.get(SIGNALS) as number | undefined) ?? 0
  }

  async #open (engine: Engine): Promise<void> {
    const from = this.applied
    // A node seen before reads what changed since; a new node reads the current rows.
    const watch = this.#watch = await engine.state.watch(from > 0 ? { include: KvWatchInclude.AllHistory, resumeFromRevision: from + 1 } : { include: KvWatchInclude.LastValue })
    void (async () => {
      for await (const entry of watch) this.#arrive({ entry })
    })().then(() => this.#reopen(engine, 'ended'), (err: unknown) => this.#reopen(engine, err))
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
      this.#open(engine).catch((err: unknown) => this.#reopen(engine, err))
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
    this.#signals?.stop()
  }

  #flush (): void {
    this.#scheduled = false
    if (this.#queue.length === 0) return
    const arrived = this.#queue
    this.#queue = []
    let revision: number | undefined
    let signal: number | undefined
    this.#store.write(() => this.#changes.applying(() => {
      const waiting = this.#changes.pendingKeys(stateKey)
      for (const item of arrived) {
        if ('entry' in item) {
          const { entry } = item
          revision = entry.revision
          const { table, key } = parseStateKey(entry.key)
          if (this.#following && EVENTUAL_TABLES.has(table)) continue
          this.#apply(waiting, entry.key, table, key, entry.operation === 'PUT' ? unpackValue(entry.value) : undefined)
        } else {
          signal = item.seq
          for (const [table, key, value] of item.rows) this.#apply(waiting, stateKey(table, key), table, key, value)
        }
      }
      if (revision !== undefined) this.#store.meta.putSync(APPLIED, revision)
      if (signal !== undefined) this.#store.meta.putSync(SIGNALS, signal)
    }))
    if (revision !== undefined) this.#applying.reached(revision)
  }

  /** Writes one row another node changed (value undefined: removed), unless this node holds a newer change or it. */
  #apply (waiting: Set<string>, kvKey: string, table: string, key: Key, value: unknown): void {
    if (waiting.has(kvKey)) return
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
