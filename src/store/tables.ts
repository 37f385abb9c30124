import { accountTables } from '../accounts/records.js'
import { agentTables } from '../agents/records.js'
import { authTables } from '../auth/records.js'
import { biddingTables } from '../bidding/records.js'
import { campaignTables } from '../campaigns/records.js'
import { clusterTables } from '../cluster/records.js'
import { creativeTables } from '../creatives/records.js'
import { eventTables } from '../events/records.js'
import { exchangeTables } from '../exchange/records.js'
import { httpTables } from '../http/records.js'
import { inventoryTables } from '../inventory/records.js'
import { notifyTables } from '../notify/records.js'
import { playerTables } from '../player/records.js'
import { proofTables } from '../proof/records.js'
import { webhookTables } from '../webhooks/records.js'
import { storeTables } from './records.js'
import type { Database } from 'lmdb'
import type { CachedTable } from './read-cache.js'
import type { CachedSpec, TableSpec } from './table.js'

/**
 * Every table of the LMDB environment, each declared once in its owning domain's records.ts. The Store opens them
 * (its fields are their keys here), the cluster ships them by their replication, and the layout test checks that
 * only their owners write them. The one import of every domain by the store: the registry.
 *
 * What is replicated to every node of a cluster (docs/architecture.md, "Beyond one machine") is what is read on every
 * request, written rarely next to reads, and must reach every node within a second: accounts and keys, the stored
 * outcomes of Idempotency-Keys (a retry through the load balancer replays wherever it lands), the operator's switches,
 * creatives and the bytes of their assets, webhook subscriptions (an event is delivered by whichever node raised it),
 * the inventory (screens with their devices, embed tokens and player bindings, their FEIN state and heartbeats), the
 * catalog (campaigns with what each node delivered of them, placements, reservations and their holds, deals, media
 * buys and the spots booked per screen and day, written under the `catalog` lock, src/campaigns/catalog-lock.ts), the
 * exchanges' bidder aliases, signed proofs of play with each node's day counts of them (their indexes are derived
 * where a proof is applied, src/proof/chain.ts), the webhook delivery log, and the bidding book (a bid taken by one
 * node wins on the node owning its screen's partition, which decides its spots, and a seat's counters sum every
 * node's). What each node
 * derives from screens (the adslots order, pre-encoded rows, counts) is not replicated: the applier has Inventory
 * derive it where it applies a screen's row.
 */
export const TABLES = {
  ...storeTables,
  ...accountTables,
  ...authTables,
  ...httpTables,
  ...inventoryTables,
  ...creativeTables,
  ...campaignTables,
  ...agentTables,
  ...biddingTables,
  ...playerTables,
  ...exchangeTables,
  ...proofTables,
  ...notifyTables,
  ...webhookTables,
  ...eventTables,
  ...clusterTables
}

/** What opening a declared table gives the Store. */
type Opened<S> = S extends CachedSpec<infer V> ? CachedTable<V> : S extends TableSpec<infer V, infer K> ? Database<V, K> : never

/** The tables as the Store holds them, by field. */
export type Tables = { -readonly [F in keyof typeof TABLES]: Opened<typeof TABLES[F]> }

const specs = Object.values(TABLES)

/**
 * Replicated tables whose writes do not wait for the engine's quorum before the request answers: FEIN measurements
 * and heartbeats, rewritten every few seconds per screen, where a lost last one is replaced by the next and a quorum
 * round trip on each would hold the partner's hot routes. They ship in the same outbox, in order.
 */
export const EVENTUAL_TABLES: ReadonlySet<string> = new Set(specs.filter((s) => s.replication === 'eventual').map((s) => s.name))

/**
 * Replicated tables of the bidding book: stored bids, written on every bid at the bidders' rate and settled by the
 * decision of the screen's next spot, and each node's hourly counters of a seat's bids and wins (GET /stats sums
 * every node's). A request waits for the engine's quorum on the bids (they are money events), but they ship as one
 * message a shipping round and partition of their screens to the book stream rather than a KV message a row: a bid
 * lives only until its imp expires (src/cluster/shipper.ts). A bid reaches only the node owning its screen's
 * partition, which decides its spots (src/cluster/book-parts.ts); the counters go to the state bucket, which every
 * node reads (SNAPSHOT_TABLES).
 */
export const BOOK_TABLES: ReadonlySet<string> = new Set(specs.filter((s) => s.replication === 'book').map((s) => s.name))

/**
 * Replicated tables whose rows are written to the state bucket as snapshots (src/cluster/shipper.ts): the eventual
 * tables every few seconds, which travel as signals too (a node reads their snapshots only while it catches up at
 * start), and the book's tables whose rows are not bids, each row written by one node (a seat's counters, keyed with
 * the node's id last), every second, which every node reads there.
 */
export const SNAPSHOT_TABLES: ReadonlySet<string> = new Set(specs.filter((s) => s.replication === 'eventual' || s.snapshot).map((s) => s.name))

/**
 * Replicated tables of records rewritten under their lock (seats, partners, creatives, the catalog...): each change to
 * them is decided in the names' log (src/cluster/fenced-commits.ts), never put in the state bucket, so a write under a
 * lock is never overtaken by an older value that came another way.
 */
export const RECORD_TABLES: ReadonlySet<string> = new Set(specs.filter((s) => s.replication === 'record').map((s) => s.name))

/** Of the snapshot tables, which changes go to the state bucket with their round (TableSpec.withRound). */
export const WITH_ROUND: ReadonlyMap<string, (written: unknown, value: unknown) => boolean> = new Map(specs.flatMap((s) => s.withRound !== undefined ? [[s.name, s.withRound] as const] : []))

/** How many tables are read through CachedTable: each has two generations in the hot threads' shared memory. */
export const CACHED_TABLES = specs.filter((s) => s.cached).length
