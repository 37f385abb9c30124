import { queueDueReports, reportsDue } from '../agents/delivery-reports.js'
import { activateMediaBuys, mediaBuysDue } from '../agents/media-buy-activation.js'
import type { ScreenClaims } from '../bidding/auction/claims.js'
import { expireBids } from '../bidding/auction/expiry.js'
import { resolvePending } from '../bidding/auction/fenced-settlements.js'
import { catalogRecord } from '../campaigns/catalog-lock.js'
import { campaignJobsDue, runCampaignJobs } from '../campaigns/lifecycle.js'
import type { Clock } from '../clock.js'
import type { ClusterNode } from '../cluster/node.js'
import type { ShippedChanges } from '../cluster/shipped.js'
import type { ResolvedConfig } from '../config.js'
import { expireExchangeBids } from '../exchange/routes/bidder.js'
import type { Inventory } from '../inventory/inventory.js'
import type { Logger } from '../log.js'
import type { Notices } from '../notify/notices.js'
import type { Outbox } from '../store/outbox.js'
import type { Store } from '../store/store.js'
import type { Supervisor } from './supervisor.js'

/** What a round of the periodic jobs moved, across the hot threads and this one (Service.runJobs). */
export interface JobCounts {
  demoted: number
  offline: number
  expiredHolds: number
  campaignMoves: number
  expiredDeals: number
  expiredBids: number
  expiredExchangeBids: number
}

export interface JobDeps {
  config: ResolvedConfig
  clock: Clock
  log: Logger
  store: Store
  outbox: Outbox
  notices: Notices
  claims: ScreenClaims
  inventory: Inventory
  threads: Supervisor
  /** A cluster node's link to its engine, and how far its changes are held: the catalog's jobs run under its lock. */
  cluster?: { node: ClusterNode, shipped: ShippedChanges }
  /** Run hourly: the sweeps of tables that would only grow otherwise. */
  hourly: Array<() => void>
}

/**
 * The periodic jobs, every second: in each hot thread, screens' freshness and heartbeat deadlines; here, campaign
 * moves, expired holds and deals, media buys whose creative was approved and media buys' due delivery reports (on a
 * cluster node under the catalog's lock, once cluster-wide), and bids their imps outlived (this node's own).
 */
export async function startJobs (d: JobDeps): Promise<{ runJobs: () => Promise<JobCounts>, stop: () => void }> {
  const { store, clock } = d
  const catalogJobs = (now: number) => ({
    ...runCampaignJobs(store, d.outbox, now),
    activatedMediaBuys: activateMediaBuys({ store, outbox: d.outbox, inventory: d.inventory, config: d.config }, now),
    queuedReports: queueDueReports({ store, notices: d.notices }, now)
  })
  const nothingMoved = { expiredHolds: 0, campaignMoves: 0, expiredDeals: 0, activatedMediaBuys: 0, queuedReports: 0 }
  const cluster = d.cluster
  // The engine's client loads only on a cluster node.
  const locked = cluster !== undefined ? new (await import('../cluster/locked-jobs.js')).LockedJobs({ node: cluster.node, store, shipped: cluster.shipped, nodeId: d.config.cluster!.nodeId, ackTimeoutMs: d.config.cluster!.ackTimeoutMs, log: d.log }) : undefined
  const ownJobs = async () => {
    // A cluster node's settlements whose verdict it never applied are decided from their logs' rows.
    if (cluster !== undefined) resolvePending(store, d.notices, (p) => cluster.node.logTime(p))
    const catalog = locked === undefined ? catalogJobs(clock.now()) : await locked.run(catalogRecord(), () => campaignJobsDue(store, clock.now()) || mediaBuysDue(store, clock.now()) || reportsDue(store, clock.now()), () => catalogJobs(clock.now()))
    return {
      ...(catalog ?? nothingMoved),
      expiredBids: expireBids({ store, notices: d.notices, claims: d.claims }, clock.now()),
      expiredExchangeBids: expireExchangeBids(store, clock.now())
    }
  }
  const runJobs = async (): Promise<JobCounts> => {
    // This thread's Inventory arms the signals of the screens a cluster node applied from the engine.
    const inThreads = [...await d.threads.call('runJobs'), d.inventory.runJobs()]
    return {
      demoted: inThreads.reduce((n, j) => n + j.demoted, 0),
      offline: inThreads.reduce((n, j) => n + j.offline, 0),
      ...await ownJobs()
    }
  }
  const timers = [
    setInterval(() => {
      ownJobs().catch((err: unknown) => d.log.error('a job failed', { error: err instanceof Error ? err.message : String(err) }))
      d.inventory.runJobs()
    }, 1000),
    setInterval(() => { for (const f of d.hourly) f() }, 3_600_000)
  ]
  for (const t of timers) t.unref()
  return { runJobs, stop: () => { for (const t of timers) clearInterval(t) } }
}
