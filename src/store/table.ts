import type { Key } from 'lmdb'

/**
 * How a table travels between the nodes of a cluster (docs/architecture.md, "Beyond one machine"). `local`: never,
 * each node keeps its own (what it derives, what it alone writes and reads). `quorum`: a request that wrote it answers
 * once the engine's quorum holds the change. `eventual`: shipped in the same order, without the wait (FEIN and
 * heartbeats, rewritten every few seconds, where a lost last one is replaced by the next). `book`: the bidding book,
 * waited for like `quorum` but shipped as one message a round to the book stream (src/cluster/shipper.ts). `record`:
 * waited for like `quorum`, a record rewritten under its lock (RouteDef.exclusive): every change to it goes through
 * the names' log, where one written under a lock takes effect only while the lock is still its writer's
 * (src/cluster/fenced-commits.ts).
 */
export type Replication = 'local' | 'quorum' | 'record' | 'eventual' | 'book'

/**
 * One table of the LMDB environment, declared once in its owning domain's records.ts (this file is of the records
 * layer: it imports nothing of ours): the Store, the replicated sets and the layout test's owners are derived from
 * the declarations (src/store/tables.ts).
 */
export interface TableSpec<V, K extends Key> {
  /** The LMDB database's name: what is on disk, and what a cluster's changes name. */
  readonly name: string
  /** Keys as arrays or numbers, in order (lmdb-js's ordered-binary); else strings. */
  readonly ordered: boolean
  /**
   * Read through a CachedTable: decoded values kept in every hot thread, dropped by writes (src/store/read-cache.ts).
   * Only tables keyed by strings.
   */
  readonly cached: boolean
  /** Record shapes kept in the table rather than in each value: for tables written at the bidders' rate. */
  readonly shapes: boolean
  readonly replication: Replication
  /**
   * A book table whose rows are not bids, each written by one node (a seat's hourly counters): written to the state
   * bucket once a second, where every node reads them, rather than to the book stream (src/cluster/shipper.ts).
   */
  readonly snapshot: boolean
  /**
   * Of a snapshot table, the changes that go to the state bucket with their shipping round rather than with the next
   * snapshot, given the value last written there: what a node killed right after must not take with it (a win, a
   * dollar spent), where the rest of the row (a bid counted) may wait a second.
   */
  readonly withRound?: (written: unknown, value: unknown) => boolean
  /** The folders (or files) whose code may write the table; everyone else reads, or calls them. */
  readonly owners: readonly string[]
  /** Types only, never set: the values and keys. */
  readonly types?: { value: V, key: K }
}

/** A table read through the read cache. */
export interface CachedSpec<V> extends TableSpec<V, string> {
  readonly cached: true
}

type Options = Partial<Pick<TableSpec<unknown, Key>, 'ordered' | 'shapes' | 'snapshot' | 'withRound'>> & Pick<TableSpec<unknown, Key>, 'name' | 'replication' | 'owners'>

/** Declares a table. */
export function table<V, K extends Key = string> (options: Options): TableSpec<V, K> & { readonly cached: false } {
  return { ordered: false, shapes: false, snapshot: false, ...options, cached: false }
}

/** Declares a table read through the read cache (string keys). */
export function cachedTable<V> (options: Omit<Options, 'ordered' | 'shapes' | 'snapshot'>): CachedSpec<V> {
  return { ...options, ordered: false, shapes: false, snapshot: false, cached: true }
}
