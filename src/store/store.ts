import { closeSync, fsyncSync, mkdirSync, openSync } from 'node:fs'
import { join } from 'node:path'
import { open, type Database, type Key, type RootDatabase, type RootDatabaseOptions } from 'lmdb'
import { CachedTable, type CacheScope } from './read-cache.js'
import { ChangeLog, type Logged } from './changes.js'
import { CACHED_TABLES, TABLES, type Tables } from './tables.js'
import type { BookingItem, ClaimOutcome, Shortfall } from '../campaigns/records.js'
import type { SettleCommand } from '../bidding/records.js'
import type { ProofCommand, ProofVerdict } from '../proof/records.js'

/** The one LMDB environment that holds all state (DESIGN: src/store). */
export interface Store extends Tables {
  root: RootDatabase
  /**
   * This node's id in a cluster (CLUSTER_NODE_ID; Share.node), '' on a single node: the rows only this node writes are
   * keyed by it.
   */
  readonly node: string
  /** How this node shares the market's state with other nodes (Share): ALONE on a single node. */
  readonly share: Share
  /**
   * Runs fn in one synchronous write transaction and returns its result; a throw rolls everything back. Commits are
   * in the OS before this returns (a kill -9 loses nothing acknowledged) and reach the disk as Durability says.
   * Synchronous on purpose: uWS cannot answer a pipelined request on a later tick.
   */
  write<T> (fn: () => T): T
  /**
   * Runs fn once the current write transaction has committed (at once outside one); a rollback drops it. For memory
   * that mirrors what the transaction wrote, and for side effects that must not happen for a rolled-back write.
   */
  afterCommit (fn: () => void): void
  /**
   * Runs fn inside the current write transaction, after its callback has returned and before it commits (at once
   * outside one): for writes gathered over a transaction and made once, as the funnel log's record of its events.
   */
  beforeCommit (fn: () => void): void
  /** Runs fn once the current write transaction has ended, committed or rolled back (at once outside one). */
  afterEnd (fn: () => void): void
  /** Whether a write transaction is open on this thread (what a write made now would commit with). */
  readonly inTransaction: boolean
  /** The serial of the write transaction running (or last run) on this store: what a transaction does once keys on it. */
  readonly transaction: number
  /** The cached tables' generations, shared by every hot thread's store over this environment (openStore's last argument). */
  readonly generations: SharedArrayBuffer
  /**
   * This thread's write transactions and the seconds they held LMDB's one writer lock, from taking it to the commit:
   * the time no other thread can commit, which bounds a node's writes however many cores it has (/metrics).
   */
  readonly held: { transactions: number, seconds: number }
  /**
   * Makes the next read see every commit made so far, by any thread. lmdb-js keeps a thread's read snapshot until a
   * zero-delay timer renews it, so a read soon after another could miss what a second thread has just committed: each
   * request, and each message from another thread, starts with this (about a microsecond).
   */
  refresh (): void
  /**
   * The writes this node made to the replicated tables, waiting to be shipped to the cluster's engine (src/cluster);
   * undefined on a single node, which records nothing.
   */
  readonly changes: ChangeLog | undefined
  /** A replicated table by its LMDB name, as the routes write it (a cached table moves its generation): for the engine's changes. */
  replicated (name: string): Pick<Database<unknown, Key>, 'get' | 'putSync' | 'removeSync'> | undefined
  /** Waits for the last commit to reach the disk, then closes the environment. */
  close (): Promise<void>
}

/**
 * How this node shares the market's state with other nodes: the domain's side of the seam between a node and its
 * cluster. A node alone (ALONE) holds all of it: it settles every bid it stores the moment its imp expires, raises a
 * campaign's milestones with the play that calls for them, and may commit whatever is left of a budget. A cluster
 * node (src/cluster/share.ts) holds the bids of the partitions of the screens it serves and settles only those,
 * leaves milestones to the catalog's job, and commits only the parts of a budget the engine granted it. The
 * composition root chooses one when it opens the store.
 */
export interface Share {
  /**
   * How long past its imp's expiry an unsettled bid waits before this node settles it: another node deciding its
   * screen may have taken it just before, and that settlement must arrive first.
   */
  readonly expiryGraceMs: number
  /**
   * What this node does with a stored bid on this screen whose imp expired: `settle` it (its loss notice, and its
   * removal is news to the other nodes), as the node deciding the screen's spots does; leave it for `later`, as a
   * cluster node taking the screen's partition on does until it decides its spots; or `drop` it from its own copy
   * silently, as any other node does.
   */
  expiry (screenId: string): 'settle' | 'later' | 'drop'
  /**
   * This node's name where several share the market (CLUSTER_NODE_ID), undefined alone: what a stored bid, a screen's
   * heartbeat and an adslots cursor name as the node that keeps them.
   */
  readonly node: string | undefined
  /**
   * Runs a write to this node's own copy that is not news to any other node (a node drops its copy of a bid another
   * node settles). Call inside Store.write.
   */
  ownCopy<T> (store: Store, write: () => T): T
  /** Whether a play's delivery raises its campaign's milestones at once; else the catalog's job raises them, once. */
  readonly milestonesWithPlay: boolean
  /**
   * What this node may still commit of a campaign's budget beyond what its bids hold (reservedMicros), or undefined
   * when it may commit all that is left of it. When that falls under half of partMicros while the budget is still
   * owed, it asks for the next part, ahead of need, at most once a second per campaign (now: the service's clock).
   */
  budgetLeft (store: Store, campaignId: string, reservedMicros: number, partMicros: number, owed: boolean, now: number): number | undefined
  /**
   * Where this node's bookings of screen time are decided when it does not decide them itself, in the request's own
   * transaction (ALONE: undefined). The rule is src/campaigns/capacity.ts either way.
   */
  readonly bookings: Bookings | undefined
  /**
   * Where this node's settlements of bids count, when not in the transaction that writes them (ALONE: undefined). A
   * cluster node's count once its screen's partition's log accepts them under the epoch it decided in; until then
   * their notices are held, and their bids leave only its own copy (src/bidding/auction/fenced-settlements.ts).
   */
  readonly settlements: SettlementFence | undefined
  /**
   * Where this node's plays take their place in their screens' proof chains, when not in the request's own
   * transaction (ALONE: undefined): a cluster's proof log, whose order places every node's (src/proof/proof-log.ts).
   * Resolves with the plays' verdicts, in order, or undefined when they are not all known in time.
   */
  readonly proofs: ((plays: ProofCommand[]) => Promise<ProofVerdict[] | undefined>) | undefined
}

/** Settlements that count once a log accepts them (Share.settlements). */
export interface SettlementFence {
  /** The partition of the screens a screen's settlements are decided in. */
  partition (screenId: string): number
  /** Proposes a committed settlement to its partition's log; resolves true once accepted, false refused or unknown in time. */
  propose (partition: number, command: SettleCommand): Promise<boolean>
  /**
   * The verdict of a settlement this thread proposed (by its key), for the request that decided it: the proposal is
   * made when the decision's turn commits, which the request waits for first.
   */
  verdict (key: string): Promise<boolean>
}

/** Bookings of screen time decided elsewhere than in the booking request's transaction (Share.bookings). */
export interface Bookings {
  /** Takes items under a new claim (a hold for holdMs), or names the first that does not fit. */
  take (store: Store, items: BookingItem[], holdMs: number | undefined, now: number): { claim: string } | { short: Shortfall } | { refused: ClaimOutcome }
  /** Gives a claim back: a hold released, a hold whose time came, or a firm booking booked again. */
  give (store: Store, claim: string, why: 'release' | 'expire' | 'rebook', now: number): ClaimOutcome
  /** Keeps a held claim for good. */
  keep (store: Store, claim: string, now: number): ClaimOutcome
  /** The bookings of the request under way, for work it goes on with on a later turn (an agent's tool call). */
  current (): unknown
  /** Runs fn (one transaction) within what current() gave. */
  within<T> (booking: unknown, fn: () => T): T
}

/** One node alone. */
export const ALONE: Share = {
  expiryGraceMs: 0,
  expiry: () => 'settle',
  node: undefined,
  ownCopy: (_store, write) => write(),
  milestonesWithPlay: true,
  budgetLeft: () => undefined,
  bookings: undefined,
  settlements: undefined,
  proofs: undefined
}

/**
 * How commits reach the disk. `os`: a commit is in the operating system's page cache when transactionSync returns
 * (a process crash, kill -9 included, loses nothing acknowledged) and the file is fsynced every syncIntervalMs, so a
 * power loss can cost that much; about 3-10 us per small transaction here. `fsync`: every commit is flushed before it
 * is acknowledged (lmdb-js overlappingSync), about 220 us per transaction.
 */
export interface Durability {
  mode: 'os' | 'fsync'
  /**
   * `os`: how often this opener fsyncs the file; 0 leaves it to another opener. One fsync covers every thread's and
   * process's commits, so only the supervisor's store syncs: four openers syncing each second cost the hot threads
   * 3.5% of their CPU in the spot benchmark's profile.
   */
  syncIntervalMs: number
}

/** The address space every opener maps the environment with (environmentOptions says why it is fixed). */
export const MAP_SIZE = 2 ** 40

/**
 * The options every process and thread opens the environment with (the service's hot threads and supervisor, the
 * analytics process, and the benchmarks' durable floors, which must pay what the service pays).
 *
 * Never MDB_WRITEMAP. lmdb-js's LMDB keeps no dirty-page list with a writable map, yet a commit that has loose pages
 * (pages it wrote and then emptied, as deletes merge pages) and reclaimed nothing from the freelist looks each of
 * them up in that list, fails the assertion 'x <= dl[0].mid' in mdb_freelist_save() and aborts the process: every
 * hot thread at once, under a few seconds of bids (issue 25; kriszyp/lmdb-js#212; src/store/store.test.ts). Readers
 * holding older snapshots, which load brings, are what keep a commit from reclaiming. LMDB's documentation also
 * forbids mixing processes with and without the flag on one environment. Without it a commit writes its pages with
 * pwrite instead of storing into the map: one put costs 14-20 us of CPU instead of 8, a bid 20-40 us more (bench/bid).
 *
 * With noSync, a commit is in the operating system's page cache when it returns; the file is fsynced on a timer.
 *
 * The map is sized once, at 1 TiB of address space (the file grows only as pages are written). Left to lmdb-js's
 * default it starts at 128 KB, and a thread that begins a transaction on a file another process has grown past its
 * map remaps it on the spot, with no lock: two threads of one process doing that at once can leave the environment
 * with the smaller map and the larger size, and every later read past the map's end lands elsewhere. On a new data
 * directory under load, where the map doubles many times in the first seconds, that is a segfault, or a process
 * whose every write fails with MDB_BAD_TXN "mdb_page_touch no parent" (src/store/store.test.ts). With the map at
 * full size from the start, no thread ever remaps.
 *
 * readOnly: for a process that opens the environment beside the service, which writes for it (src/store/open-beside.ts).
 */
export function environmentOptions (durability: Durability, readOnly = false): RootDatabaseOptions {
  return { maxDbs: 96, mapSize: MAP_SIZE, ...(durability.mode === 'os' ? { noSync: true } : {}), ...(readOnly ? { readOnly: true } : {}) }
}

/** Opens (creating if needed) the environment under dataDir. */
export function openStore (dataDir: string, durability: Durability = { mode: 'os', syncIntervalMs: 1000 }, generations = new SharedArrayBuffer(CACHED_TABLES * 2 * 4), options: { replicate?: boolean, share?: Share, readOnly?: boolean } = {}): Store {
  mkdirSync(dataDir, { recursive: true })
  const path = join(dataDir, 'oohbid.lmdb')
  const root = open({ path, ...environmentOptions(durability, options.readOnly === true) })
  // An fsync of the file, from any descriptor, makes what noSync commits durable.
  const fd = durability.mode === 'os' ? openSync(path, 'r') : undefined
  const sync = () => { if (fd !== undefined) fsyncSync(fd) }
  const timer = fd !== undefined && durability.syncIntervalMs > 0 ? setInterval(sync, durability.syncIntervalMs) : undefined
  timer?.unref()
  let changes: ChangeLog | undefined
  // Read on every adslots row or bid: decoded values stay in memory (a page of 200 rows costs ~20 us instead of
  // ~220 us, bench/adslots), dropped by writes so that rollbacks cannot leave them wrong.
  const counters = new Int32Array(generations, 0, CACHED_TABLES)
  const begun = new Int32Array(generations, CACHED_TABLES * 4, CACHED_TABLES)
  // The generations every commit visible to this thread's next read had moved by (taken when the read snapshot was
  // dropped, before the next read renews it), and the cached tables the open transaction wrote (a bit each).
  const inSnapshot = new Int32Array(CACHED_TABLES)
  let writtenInTxn = 0
  let begunInTxn = 0
  const snapshotDropped = () => { for (let i = 0; i < CACHED_TABLES; i++) inSnapshot[i] = Atomics.load(counters, i) }
  const scope: CacheScope = {
    generations: counters,
    // A write transaction reads the newest commits (it holds the writer lock), but not its own writes for keeps.
    keeps: (slot, generation) => depth > 0 ? (writtenInTxn & (1 << slot)) === 0 : inSnapshot[slot] === generation,
    // Another thread's commit lands before its generation moves (after its commit): a write transaction taking the
    // lock in between reads that commit from LMDB, while a copy from before it is still filed under the generation.
    // Its read-modify-write would undo the commit (moderation's outcome written over a reviewer's approval). Each
    // commit moves `begun` before it lands, so a copy is current for a transaction only when the two agree.
    current: (slot, generation) => depth === 0 || Atomics.load(begun, slot) === generation,
    write: (slot, put, settle) => {
      if (depth === 0) {
        Atomics.add(begun, slot, 1)
        try {
          put()
        } finally {
          settle()
        }
        return
      }
      const bit = 1 << slot
      if ((writtenInTxn & bit) === 0) beforeCommit(() => { Atomics.add(begun, slot, 1); begunInTxn |= bit })
      writtenInTxn |= bit
      put()
      afterCommit(settle)
    }
  }
  /** A transaction that moved `begun` and then rolled back moves the generation too, or the two would never agree again. */
  const settleRolledBack = () => {
    for (let slot = 0; slot < CACHED_TABLES; slot++) if ((begunInTxn & (1 << slot)) !== 0) Atomics.add(counters, slot, 1)
  }
  // Tables written on every bid keep their record shapes in the table instead of in each value: a bid encodes in
  // half the time and decodes without rebuilding its shape.
  const shared = { sharedStructuresKey: Symbol.for('structures') }
  /** lmdb-js's msgpackr encoder of a table with shared shapes. */
  const sharedTables: Array<{ encoder?: { clearSharedData?: () => void } }> = []
  // A new shape is saved into its table inside the transaction that first packs it, but msgpackr keeps it in memory
  // either way: after a rollback (a dry run, a failed request) this thread would go on writing records whose shape
  // no other thread or process can read, and read theirs with a shape they never had (every auction event of a
  // benchmark that probed screens with dry runs was unreadable to the analytics process). A rollback makes each such
  // table's encoder reload the shapes that were committed.
  const forgetUncommittedShapes = () => { for (const table of sharedTables) table.encoder?.clearSharedData?.() }
  let depth = 0
  let transaction = 0
  let pending: Array<() => void> = []
  let closing: Array<() => void> = []
  let ending: Array<() => void> = []
  const held = { transactions: 0, seconds: 0 }
  const write = <T>(fn: () => T): T => {
    depth++
    if (depth === 1) transaction++
    // From the lock taken (the callback starts) to the commit done: the time no other thread can commit.
    let started = 0
    let result: T
    try {
      // A nested write runs inside the outer transaction: its writes, its afterCommit work and its rollback are the
      // outer one's (lmdb-js would otherwise open a child transaction, whose rollback a caught error would not reach).
      result = depth === 1 ? root.transactionSync(() => { started = performance.now(); return closed(fn()) }) : fn()
      // lmdb-js dropped the read snapshot with the commit; nothing has read since.
      if (depth === 1) snapshotDropped()
    } catch (err) {
      if (depth === 1) {
        pending = []
        closing = []
        forgetUncommittedShapes()
        settleRolledBack()
      }
      throw err
    } finally {
      if (depth === 1) {
        writtenInTxn = 0
        begunInTxn = 0
      }
      depth--
      if (depth === 0 && started > 0) {
        held.transactions++
        held.seconds += (performance.now() - started) / 1000
      }
      if (depth === 0 && ending.length > 0) {
        const run = ending
        ending = []
        for (const f of run) f()
      }
    }
    if (depth === 0 && pending.length > 0) {
      const run = pending
      pending = []
      for (const f of run) f()
    }
    return result
  }
  /** The outer callback's result, once the work it left for the end of its transaction is done. */
  const closed = <T>(result: T): T => {
    // A closing write may leave more (one that fills a record starts the next).
    for (let i = 0; i < closing.length; i++) closing[i]!()
    closing = []
    return result
  }
  const beforeCommit = (fn: () => void): void => {
    if (depth === 0) fn()
    else closing.push(fn)
  }
  const afterCommit = (fn: () => void): void => {
    if (depth === 0) fn()
    else pending.push(fn)
  }
  const afterEnd = (fn: () => void): void => {
    if (depth === 0) fn()
    else ending.push(fn)
  }
  const meta = root.openDB<unknown, string>(TABLES.meta.name, {})
  if (options.replicate === true) {
    // With shared shapes: a hot turn's bids are packed into it once more and read back by the shipper.
    const log = root.openDB<Logged, number>('cluster_changes', { keyEncoding: 'ordered-binary', ...shared })
    sharedTables.push(log as unknown as typeof sharedTables[number])
    changes = new ChangeLog(log, meta, { get inTransaction () { return depth > 0 }, write, beforeCommit, afterCommit, afterEnd })
  }
  const opened: Record<string, unknown> = {}
  /** The replicated tables as the routes write them, by LMDB name: for the engine's changes. */
  const replicated = new Map<string, Pick<Database<unknown, Key>, 'get' | 'putSync' | 'removeSync'>>()
  let slots = 0
  for (const [field, spec] of Object.entries(TABLES)) {
    let table: Database<unknown, Key> = spec.name === TABLES.meta.name ? meta : root.openDB(spec.name, { ...(spec.ordered ? { keyEncoding: 'ordered-binary' } : {}), ...(spec.shapes ? shared : {}) })
    if (spec.shapes) sharedTables.push(table as unknown as typeof sharedTables[number])
    // On a cluster node, a replicated table records each write for the engine.
    if (changes !== undefined && spec.replication !== 'local') table = changes.capture(spec.name, table, spec.replication === 'eventual')
    const read = spec.cached ? new CachedTable<unknown>(table as Database<unknown, string>, slots++, scope) : table
    opened[field] = read
    if (spec.replication !== 'local') replicated.set(spec.name, read as Pick<Database<unknown, Key>, 'get' | 'putSync' | 'removeSync'>)
  }
  const store: Store = {
    ...opened as Tables,
    root,
    node: options.share?.node ?? '',
    share: options.share ?? ALONE,
    write,
    get inTransaction () { return depth > 0 },
    get transaction () { return transaction },
    generations,
    held,
    afterCommit,
    beforeCommit,
    afterEnd,
    changes,
    replicated: (name) => replicated.get(name),
    refresh () {
      if (depth !== 0) return
      root.resetReadTxn()
      snapshotDropped()
    },
    async close () {
      if (timer !== undefined) clearInterval(timer)
      await root.flushed
      sync()
      await root.close()
      if (fd !== undefined) closeSync(fd)
    }
  }
  return store
}
