import { seatListApplied } from '../accounts/seat-lists.js'
import { bookApplied, forgetBids } from '../bidding/book.js'
import type { ScreenClaims } from '../bidding/auction/claims.js'
import type { BookKey } from '../bidding/records.js'
import { budgetBook } from '../campaigns/budget.js'
import { holdApplied } from '../campaigns/holds.js'
import type { Clock } from '../clock.js'
import type { ClusterNode } from '../cluster/node.js'
import type { ServedPartitions } from '../cluster/served-partitions.js'
import type { ShippedChanges } from '../cluster/shipped.js'
import type { ResolvedConfig } from '../config.js'
import type { RateLimiter } from '../http/rate-limit.js'
import type { Inventory } from '../inventory/inventory.js'
import type { Logger } from '../log.js'
import type { Moderator } from '../moderation/moderator.js'
import type { Notices } from '../notify/notices.js'
import type { FunnelLog } from '../events/funnel.js'
import { proofApplied } from '../proof/chain.js'
import { PROOFS_LOG, proofMachine } from '../proof/proof-log.js'
import type { Outbox } from '../store/outbox.js'
import { StartRefused } from '../start-refused.js'
import { partitionMachines } from './capacity.js'
import type { ObjectStore } from '../store/objects.js'
import type { Store } from '../store/store.js'
import type { Supervisor } from './supervisor.js'

export interface JoinDeps {
  config: ResolvedConfig
  clock: Clock
  log: Logger
  store: Store
  objects: ObjectStore
  inventory: Inventory
  claims: ScreenClaims
  /** The node's notice queue: a spot decided here sends its notices once its partition's log accepts it. */
  notices: Notices
  /** Where the proofs this node proposed announce themselves once the proof log places them. */
  outbox: Outbox
  funnel: FunnelLog
  moderator: Moderator
  limiter: RateLimiter
  /** How far this node's changes are held by the engine, in memory the hot threads share. */
  shipped: ShippedChanges
  threads: Supervisor
  /** The partitions whose spots this node decides, set as it comes to hold their bids. */
  served: ServedPartitions
  /** This node's own URL, which the other nodes forward players to unless CLUSTER_NODE_URL says another. */
  url: string
}

/**
 * Joins the node's cluster (undefined on a single node): it serves only once it holds what the cluster acknowledged
 * while it was away. What the engine applies here is derived as the owners would (the adslots order, seat lists,
 * proofs from before the proof log, the bidding book), and moderation runs once cluster-wide. A node that cannot join refuses to start.
 */
export async function joinClusterOf (d: JoinDeps): Promise<ClusterNode | undefined> {
  const { config, store } = d
  const cluster = config.cluster
  if (cluster === undefined) return undefined
  // The engine's client (nats) loads only on a cluster node: a node alone starts without it.
  const { joinCluster } = await import('../cluster/node.js')
  const node = await joinCluster({
    cluster,
    store,
    objects: d.objects,
    shipped: d.shipped,
    limiter: d.limiter,
    budgets: budgetBook(store, () => d.clock.now()),
    log: d.log,
    onShipped: () => d.threads.notify('shipped'),
    onGranted: () => d.threads.notify('granted'),
    release: (events) => d.outbox.release(events),
    logs: [...partitionMachines(store, d.notices, cluster), { stream: PROOFS_LOG, machine: proofMachine({ store, outbox: d.outbox, funnel: d.funnel }) }],
    served: d.served,
    url: d.url,
    onApplied: (table, key, previous) => {
      d.inventory.applied(table, key as string)
      seatListApplied(store, table, key as string, previous)
      holdApplied(store, table, key as string, previous)
      proofApplied(store, table, key as string)
      bookApplied(store, d.claims, cluster.partitions, table, key as BookKey)
    },
    onForget: (belongs, keep) => forgetBids(store, belongs, (key) => keep('bids', key))
  }).catch((err: unknown) => {
    throw new StartRefused(err instanceof Error ? err.message : String(err))
  })
  if (cluster.nodeUrl === undefined && (config.host === '0.0.0.0' || config.host === '::')) {
    d.log.warn('cluster: CLUSTER_NODE_URL is not set and HOST listens everywhere: the other nodes forward this node its players at ' + d.url + ', which reaches it only from this machine; set CLUSTER_NODE_URL when the nodes are on several machines')
  }
  const nodeId = cluster.nodeId
  d.moderator.claimWith({ claim: (id) => node.claim(`moderation:${id}`, nodeId), release: (id) => node.release(`moderation:${id}`, nodeId) })
  return node
}
