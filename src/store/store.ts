import { closeSync, fsyncSync, mkdirSync, openSync } from 'node:fs'
import { join } from 'node:path'
import { open, type Database, type Key, type RootDatabase, type RootDatabaseOptions } from 'lmdb'
import { CachedTable, type CacheScope } from './read-cache.js'
import { ChangeLog, type Change } from './changes.js'
import type { FunnelEvent, ProofRecord } from '../generated/types.js'
import type { ChainHead, ProofDay } from '../proof/records.js'
import type { SeatRecord } from '../accounts/records.js'
import type { MediaBuyRecord, PropertyListRecord, SignalActivation } from '../agents/records.js'
import type { KeyRecord } from '../auth/records.js'
import type { BookKey, ExpiryKey, HourStats, StoredBid } from '../bidding/records.js'
import type { AssignmentRecord, CampaignDelivery, CampaignRecord, DealRecord, HeldBudget, ReservationRecord } from '../campaigns/records.js'
import type { CreativeRecord } from '../creatives/records.js'
import type { BidderAliasRecord, ExchangeBidRecord } from '../exchange/records.js'
import type { IdempotencyRecord } from '../http/records.js'
import type { FeinState, IndexKey, IndexTuple, PartnerRecord, PastKey, ScreenRecord, ScreenStatus } from '../inventory/records.js'
import type { NoticeRecord } from '../notify/records.js'
import type { SpotRecord } from '../player/records.js'
import type { ObjectSum, OutboxEvent } from './records.js'
import type { FunnelKey } from '../events/records.js'
import type { DeliveryRecord, WebhookHealth, WebhookRecord } from '../webhooks/records.js'

/** The one LMDB environment that holds all state (DESIGN: src/store). */
export interface Store {
  root: RootDatabase
  seats: CachedTable<SeatRecord>
  keys: CachedTable<KeyRecord>
  keyDigests: Database<string, string>
  /** [seat_id lower-cased, created_at, key_id] -> 1: a seat's keys, oldest first (src/auth/keys.ts). */
  seatKeys: Database<1, [string, string, string]>
  partners: CachedTable<PartnerRecord>
  partnerSlugs: Database<string, string>
  idempotency: Database<IdempotencyRecord, string>
  outbox: Database<OutboxEvent, number>
  /** Operator actions, kept after the outbox is compacted. */
  audit: Database<OutboxEvent, number>
  meta: Database<unknown, string>
  /** object key -> the size and SHA-256 of a stored object's bytes (src/store/objects.ts). */
  objects: Database<ObjectSum, string>
  /** The operator's switches (src/store/settings.ts). */
  settings: Database<unknown, string>
  screens: CachedTable<ScreenRecord>
  /** partner_id + NUL + device_id -> screen_id. */
  devices: Database<string, string>
  /** embed token -> screen_id; every player request reads it, so it is cached. */
  embeds: CachedTable<string>
  fein: CachedTable<FeinState>
  status: Database<ScreenStatus, string>
  /**
   * screen_id -> the device fingerprint its player page is bound to (the fp of the first page that opened embed_url).
   * Every spot request checks it and it changes only when a player binds or is released, so it is cached, apart from
   * the status every heartbeat rewrites.
   */
  players: CachedTable<string>
  /** The adslots order: [source, quality rank, -vas, screen_id] -> filter tuple (src/inventory/adslot-index.ts). */
  adslotIndex: Database<IndexTuple, IndexKey>
  /** screen_id -> its current adslotIndex key. */
  adslotPos: Database<IndexKey, string>
  /** Keys screens held before they moved, kept for walks: [source, rank, -vas, screen_id, since] -> until version. */
  adslotPast: Database<number, PastKey>
  /** [until version, screen_id] -> the adslotPast key it ended and when (ms): oldest first, for collection. */
  adslotPastEnds: Database<[PastKey, number], [number, string]>
  /** adslots version a walk started from -> when a page of it was last served (ms). */
  adslotWalks: Database<number, number>
  /** screen_id -> pre-encoded rows (src/inventory/rows.ts). */
  rows: CachedTable<string[]>
  creatives: CachedTable<CreativeRecord>
  /** [seat_id lower-cased, -created ms, creative_id] -> creative_id: a seat's creatives, newest first. */
  campaigns: CachedTable<CampaignRecord>
  assignments: Database<AssignmentRecord, string>
  reservations: Database<ReservationRecord, string>
  deals: CachedTable<DealRecord>
  /** media_buy_id -> the media buy an AI buying agent made (src/agents). */
  mediaBuys: Database<MediaBuyRecord, string>
  /** [seat_id lower-cased, segment id] -> a FEIN signal the seat activated (src/agents/signals.ts). */
  signalActivations: Database<SignalActivation, [string, string]>
  /** media_buy_id -> its end (ms), while a package of it waits for a creative's approval (src/agents/media-buys.ts). */
  mediaBuysWaiting: Database<number, string>
  /** [due ms, media_buy_id] -> 1: the next delivery report of each buy with a reporting webhook (src/agents/delivery-reports.ts). */
  mediaBuyReports: Database<number, [number, string]>
  /** list_id -> a buyer's governance list of screens (src/agents/property-lists.ts). */
  propertyLists: Database<PropertyListRecord, string>
  /** [kind, seat_id lower-cased, -created ms, id] -> id: a seat's creatives, campaigns, assignments and reservations, newest first. */
  bySeat: Database<string, [string, string, number, string]>
  /** [screen_id, date] -> spots taken by placements, held reservations and guaranteed deals. */
  booked: Database<number, [string, string]>
  /** [screen_id, date, hour] -> spots of that day booked in that hour by guaranteed lines with dayparts. */
  bookedHours: Database<number, [string, string, number]>
  /** [screen_id, start_date, assignment_id] -> assignment_id: what each screen plays (the player feed reads it). */
  placements: Database<string, [string, string, string]>
  /** [screen_id, imp id's tag, seat_id] (src/bidding/book.ts) -> the seat's latest bid on that spot. */
  bids: Database<StoredBid, BookKey>
  /**
   * [seat_id lower-cased, hour start ms, node] -> that hour's bidding counters on that node ('' on one node; rows an
   * earlier version wrote have no node). A seat's hour is the sum of its rows, each written by one node only.
   */
  stats: Database<HourStats, [string, number] | [string, number, string]>
  /** [expires ms, screen_id, imp id's tag, seat_id] -> 1: stored bids in expiry order, for their lurl with code 2. */
  bidExpiry: Database<1, ExpiryKey>
  /** spot_id -> the spot a player was given. */
  spots: Database<SpotRecord, string>
  /** [screen_id, local date, line] -> spots served today for an assignment or deal line: its pacing. */
  plays: Database<number, [string, string, string]>
  /** [receiver origin, due ms, notice id] -> an outbound notice waiting for its (next) attempt. */
  notices: Database<NoticeRecord, [string, number, string]>
  /**
   * [first event id, count] -> the funnel events one transaction appended (ids first .. first + count - 1), waiting
   * for the analytics process (src/events/funnel.ts).
   */
  funnel: Database<FunnelEvent[], FunnelKey>
  /** The funnel log as it was kept before records: event id -> one event, until FunnelLog moves them (adoptLegacyEvents). */
  legacyFunnel: Database<FunnelEvent, number>
  /** webhook_id -> a webhook subscription (listed per seat through bySeat, kind 'webhook'). */
  webhooks: Database<WebhookRecord, string>
  /** webhook_id -> the subscription's health as its deliveries left it (src/webhooks/health.ts). */
  webhookHealth: Database<WebhookHealth, string>
  /** [seat_id lower-cased, -created ms, delivery_id] -> a webhook delivery and its attempts, newest first, 7 days. */
  deliveries: Database<DeliveryRecord, [string, number, string]>
  /** proof_id -> a signed proof of play. */
  proofs: Database<ProofRecord, string>
  /** screen_id -> the last proof of the screen's hash chain. */
  proofHeads: Database<ChainHead, string>
  /** [screen_id, seq] -> proof_id: each screen's chain in order. */
  proofChain: Database<string, [string, number]>
  /** impressionId -> proof_id: one proof per impression. */
  proofByImpression: Database<string, string>
  /** [screen_id, timestamp, proof_id] -> proof_id: a screen's plays in time order (GIVT burst checks). */
  proofTimes: Database<string, [string, number, string]>
  /**
   * [seat_id lower-cased, UTC day ms, node id] -> that day's proofs per tier and GIVT outcome the node signed; rows an
   * earlier version wrote have no node. A report sums a day's rows.
   */
  proofDays: Database<ProofDay, [string, number, string] | [string, number]>
  /** [seat_id lower-cased, timestamp, proof_id] -> proof_id: a buyer's proofs in time order. */
  proofsBySeat: Database<string, [string, number, string]>
  /** alias -> an exchange's bidder configuration. */
  aliases: CachedTable<BidderAliasRecord>
  /** bid_id -> a bid made to an exchange. */
  exchangeBids: Database<ExchangeBidRecord, string>
  /** [made ms, bid_id] -> 1: exchange bids still pending, oldest first, for releasing their budget. */
  exchangePending: Database<1, [number, string]>
  /** campaign_id -> the budget this node's exchange bids in flight hold (its spend is in campaignDelivery). */
  ledgers: Database<HeldBudget, string>
  /** [expires ms, reservation_id] -> reservation_id: holds in expiry order. */
  holds: Database<string, [number, string]>
  /** [campaign_id, node id] -> what the campaign delivered through that node (src/campaigns/delivery.ts). */
  campaignDelivery: Database<CampaignDelivery, [string, string]>
  /** This node's id in a cluster (CLUSTER_NODE_ID), '' on a single node: the rows only this node writes are keyed by it. */
  readonly node: string
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
 * The tables every node of a cluster holds whole, by LMDB name (docs/architecture.md, "Beyond one machine"): read on
 * every request, written rarely next to reads, and a change must reach every node within a second. Accounts and
 * keys, the stored outcomes of Idempotency-Keys (a retry through the load balancer replays wherever it lands), the
 * operator's switches, creatives and the bytes of their assets (src/store/objects.ts), webhook subscriptions (an
 * event is delivered by whichever node raised it), the inventory: screens with their devices, embed tokens and player bindings, their FEIN state and heartbeats,
 * and the catalog: campaigns with what each node delivered of them, placements, reservations and their holds, deals,
 * media buys and the spots booked per screen and day (written under the `catalog` lock, src/campaigns/catalog-lock.ts),
 * the exchanges' bidder aliases (an exchange's requests and notices reach any node), signed proofs of play with
 * each node's day counts of them (a buyer lists and exports them through any node, and a screen's chain goes on
 * wherever its player is served; their indexes are derived where a proof is applied, src/proof/chain.ts), and the
 * webhook delivery log (a delivery is made and rewritten by the node that raised its event, and listed by all), and
 * the bidding book (BOOK_TABLES: a bid taken by one node wins on whichever node decides its screen's spot, and a
 * seat's counters sum every node's). What
 * each node derives from screens (the adslots order, pre-encoded rows, counts) is not replicated: the applier has
 * Inventory derive it where it applies a screen's row.
 */
export const REPLICATED_TABLES = ['seats', 'keys', 'key_digests', 'seat_keys', 'partners', 'partner_slugs', 'idempotency', 'settings', 'objects', 'creatives', 'webhooks', 'webhook_health', 'screens', 'devices', 'embeds', 'players', 'fein', 'status', 'campaigns', 'campaign_delivery', 'assignments', 'placements', 'reservations', 'holds', 'booked', 'booked_hours', 'deals', 'media_buys', 'media_buys_waiting', 'media_buy_reports', 'signal_activations', 'property_lists', 'bidder_aliases', 'proofs', 'proof_days', 'webhook_deliveries', 'bids', 'stats'] as const

/**
 * Replicated tables whose writes do not wait for the engine's quorum before the request answers: FEIN measurements
 * and heartbeats, rewritten every few seconds per screen, where a lost last one is replaced by the next and a quorum
 * round trip on each would hold the partner's hot routes. They ship in the same outbox, in order.
 */
export const EVENTUAL_TABLES: ReadonlySet<string> = new Set(['fein', 'status'])

/**
 * Replicated tables of the bidding book: stored bids, written on every bid at the bidders' rate and settled by the
 * decision of the screen's next spot, and each node's hourly counters of a seat's bids and wins (GET /stats sums
 * every node's). A request waits for the engine's quorum on them (they are money events), but
 * they ship as one message a shipping round to the book stream rather than a KV message a row, which no node reads
 * whole: a bid lives only until its imp expires (src/cluster/shipper.ts).
 */
export const BOOK_TABLES: ReadonlySet<string> = new Set(['bids', 'stats'])

/**
 * The tables opened through CachedTable (seats, keys, partners, screens, embeds, fein, players, rows, creatives,
 * campaigns, deals, aliases), two generations each (src/store/read-cache.ts): one moved after a commit that wrote the
 * table, one before it.
 */
const CACHED_TABLES = 12

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
export function openStore (dataDir: string, durability: Durability = { mode: 'os', syncIntervalMs: 1000 }, generations = new SharedArrayBuffer(CACHED_TABLES * 2 * 4), options: { replicate?: boolean, node?: string, readOnly?: boolean } = {}): Store {
  mkdirSync(dataDir, { recursive: true })
  const path = join(dataDir, 'oohbid.lmdb')
  const root = open({ path, ...environmentOptions(durability, options.readOnly === true) })
  // An fsync of the file, from any descriptor, makes what noSync commits durable.
  const fd = durability.mode === 'os' ? openSync(path, 'r') : undefined
  const sync = () => { if (fd !== undefined) fsyncSync(fd) }
  const timer = fd !== undefined && durability.syncIntervalMs > 0 ? setInterval(sync, durability.syncIntervalMs) : undefined
  timer?.unref()
  let changes: ChangeLog | undefined
  /** A table as the routes write it: on a cluster node, a replicated table records each write for the engine. */
  const captured = <V, K extends Key>(name: string, table: Database<V, K>): Database<V, K> =>
    changes !== undefined && (REPLICATED_TABLES as readonly string[]).includes(name) ? changes.capture(name, table, EVENTUAL_TABLES.has(name)) : table
  const db = <V, K extends Key = string>(name: string, keyEncoding?: 'uint32' | 'ordered-binary') => captured(name, root.openDB<V, K>(name, keyEncoding ? { keyEncoding } : {}))
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
  let slots = 0
  const cached = <V>(name: string) => new CachedTable<V>(db<V>(name), slots++, scope)
  // Tables written on every bid keep their record shapes in the table instead of in each value: a bid encodes in
  // half the time and decodes without rebuilding its shape.
  const shared = { sharedStructuresKey: Symbol.for('structures') }
  /** lmdb-js's msgpackr encoder of a table with shared shapes. */
  const sharedTables: Array<{ encoder?: { clearSharedData?: () => void } }> = []
  const withShapes = <V, K extends Key>(name: string, keyEncoding?: 'ordered-binary'): Database<V, K> => {
    const table = root.openDB<V, K>(name, { ...(keyEncoding !== undefined ? { keyEncoding } : {}), ...shared })
    sharedTables.push(table as unknown as typeof sharedTables[number])
    return captured(name, table)
  }
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
  const meta = db<unknown>('meta')
  if (options.replicate === true) {
    // With shared shapes: a hot turn's bids are packed into it once more and read back by the shipper.
    const log = root.openDB<Change[], number>('cluster_changes', { keyEncoding: 'ordered-binary', ...shared })
    sharedTables.push(log as unknown as typeof sharedTables[number])
    changes = new ChangeLog(log, meta, { get inTransaction () { return depth > 0 }, write, beforeCommit, afterCommit, afterEnd })
  }
  const store: Store = {
    root,
    seats: cached('seats'),
    keys: cached('keys'),
    keyDigests: db('key_digests'),
    seatKeys: db<1, [string, string, string]>('seat_keys', 'ordered-binary'),
    partners: cached('partners'),
    partnerSlugs: db('partner_slugs'),
    idempotency: db('idempotency'),
    outbox: db<OutboxEvent, number>('outbox', 'ordered-binary'),
    audit: db<OutboxEvent, number>('audit', 'ordered-binary'),
    meta,
    settings: db('settings'),
    objects: db('objects'),
    screens: cached('screens'),
    devices: db('devices'),
    embeds: cached('embeds'),
    fein: cached('fein'),
    status: db('status'),
    players: cached('players'),
    adslotIndex: root.openDB<IndexTuple, IndexKey>('adslot_index', { keyEncoding: 'ordered-binary' }),
    adslotPos: db('adslot_pos'),
    adslotPast: root.openDB<number, PastKey>('adslot_past', { keyEncoding: 'ordered-binary' }),
    adslotPastEnds: root.openDB<[PastKey, number], [number, string]>('adslot_past_ends', { keyEncoding: 'ordered-binary' }),
    adslotWalks: root.openDB<number, number>('adslot_walks', { keyEncoding: 'ordered-binary' }),
    rows: cached('rows'),
    creatives: cached('creatives'),
    campaigns: cached('campaigns'),
    assignments: db('assignments'),
    reservations: db('reservations'),
    deals: cached('deals'),
    mediaBuys: db('media_buys'),
    signalActivations: db<SignalActivation, [string, string]>('signal_activations', 'ordered-binary'),
    mediaBuysWaiting: db('media_buys_waiting'),
    mediaBuyReports: db<number, [number, string]>('media_buy_reports', 'ordered-binary'),
    propertyLists: db('property_lists'),
    bySeat: root.openDB<string, [string, string, number, string]>('by_seat', { keyEncoding: 'ordered-binary' }),
    booked: db<number, [string, string]>('booked', 'ordered-binary'),
    bookedHours: db<number, [string, string, number]>('booked_hours', 'ordered-binary'),
    placements: db<string, [string, string, string]>('placements', 'ordered-binary'),
    holds: db<string, [number, string]>('holds', 'ordered-binary'),
    campaignDelivery: db<CampaignDelivery, [string, string]>('campaign_delivery', 'ordered-binary'),
    bids: withShapes<StoredBid, BookKey>('bids', 'ordered-binary'),
    stats: withShapes<HourStats, [string, number] | [string, number, string]>('stats', 'ordered-binary'),
    bidExpiry: root.openDB<1, ExpiryKey>('bid_expiry', { keyEncoding: 'ordered-binary' }),
    spots: withShapes<SpotRecord, string>('spots'),
    plays: root.openDB<number, [string, string, string]>('plays', { keyEncoding: 'ordered-binary' }),
    notices: withShapes<NoticeRecord, [string, number, string]>('notices', 'ordered-binary'),
    funnel: withShapes<FunnelEvent[], FunnelKey>('funnel_records', 'ordered-binary'),
    legacyFunnel: withShapes<FunnelEvent, number>('funnel_events', 'ordered-binary'),
    webhooks: db('webhooks'),
    webhookHealth: db('webhook_health'),
    deliveries: withShapes<DeliveryRecord, [string, number, string]>('webhook_deliveries', 'ordered-binary'),
    proofs: withShapes<ProofRecord, string>('proofs'),
    proofHeads: db('proof_heads'),
    proofChain: root.openDB<string, [string, number]>('proof_chain', { keyEncoding: 'ordered-binary' }),
    proofByImpression: db('proof_by_impression'),
    proofTimes: root.openDB<string, [string, number, string]>('proof_times', { keyEncoding: 'ordered-binary' }),
    proofDays: db<ProofDay, [string, number, string] | [string, number]>('proof_days', 'ordered-binary'),
    proofsBySeat: root.openDB<string, [string, number, string]>('proofs_by_seat', { keyEncoding: 'ordered-binary' }),
    aliases: cached('bidder_aliases'),
    exchangeBids: withShapes<ExchangeBidRecord, string>('exchange_bids'),
    exchangePending: root.openDB<1, [number, string]>('exchange_pending', { keyEncoding: 'ordered-binary' }),
    ledgers: withShapes<HeldBudget, string>('ledgers'),
    node: options.node ?? '',
    write,
    get inTransaction () { return depth > 0 },
    get transaction () { return transaction },
    generations,
    held,
    afterCommit,
    beforeCommit,
    afterEnd,
    changes,
    replicated (name) {
      const table = tables[name as typeof REPLICATED_TABLES[number]]
      return table as Pick<Database<unknown, Key>, 'get' | 'putSync' | 'removeSync'> | undefined
    },
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
  const tables: Record<typeof REPLICATED_TABLES[number], unknown> = { seats: store.seats, keys: store.keys, key_digests: store.keyDigests, seat_keys: store.seatKeys, partners: store.partners, partner_slugs: store.partnerSlugs, idempotency: store.idempotency, settings: store.settings, objects: store.objects, creatives: store.creatives, webhooks: store.webhooks, webhook_health: store.webhookHealth, screens: store.screens, devices: store.devices, embeds: store.embeds, players: store.players, fein: store.fein, status: store.status, campaigns: store.campaigns, campaign_delivery: store.campaignDelivery, assignments: store.assignments, placements: store.placements, reservations: store.reservations, holds: store.holds, booked: store.booked, booked_hours: store.bookedHours, deals: store.deals, media_buys: store.mediaBuys, media_buys_waiting: store.mediaBuysWaiting, media_buy_reports: store.mediaBuyReports, signal_activations: store.signalActivations, property_lists: store.propertyLists, bidder_aliases: store.aliases, proofs: store.proofs, proof_days: store.proofDays, webhook_deliveries: store.deliveries, bids: store.bids, stats: store.stats }
  return store
}
