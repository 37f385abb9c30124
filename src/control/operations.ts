import { dashboardOf } from '../admin/dashboard.js'
import type { Analytics } from '../analytics/client.js'
import type { Clock } from '../clock.js'
import type { BookingLink } from '../campaigns/rehearsed-bookings.js'
import type { ClusterNode } from '../cluster/node.js'
import type { ResolvedConfig } from '../config.js'
import type { FunnelLog } from '../events/funnel.js'
import type { Dashboard } from '../generated/types.js'
import { renderMetrics, type Metrics } from '../http/metrics.js'
import type { Moderator } from '../moderation/moderator.js'
import type { Notices } from '../notify/notices.js'
import type { NoticeSender } from '../notify/sender.js'
import { proposePlays } from '../proof/proof-log.js'
import type { Outbox } from '../store/outbox.js'
import type { Store } from '../store/store.js'
import type { WebhookDispatcher } from '../webhooks/dispatcher.js'
import type { Supervisor, SupervisorHandlers } from './supervisor.js'

/** What the supervisor's answers to its hot threads reach. */
export interface OperationDeps {
  config: ResolvedConfig
  clock: Clock
  log: { write (line: string): void }
  store: Store
  outbox: Outbox
  metrics: Metrics
  funnel: FunnelLog
  moderator: Moderator
  notices: Notices
  sender: NoticeSender
  webhooks: WebhookDispatcher
  analytics: Analytics
  /** The node's cluster once it has joined; undefined on a single node. */
  cluster: () => ClusterNode | undefined
  /** Its bookings, decided in the cluster's logs, once it has joined. */
  capacity: () => BookingLink | undefined
  /** The supervisor these answers are given to (it exists once they are). */
  threads: () => Supervisor
}

/** The operator dashboard's figures (GET /admin/v1/dashboard): every thread's counters beside this thread's. */
export function dashboardFor (d: OperationDeps, started: number): () => Promise<Dashboard> {
  return async () => dashboardOf([d.metrics.snapshot(d.clock.now(), false), ...await d.threads().call('snapshot', false)], {
    now: d.clock.now(), started, store: d.store, moderationQueue: d.moderator.queued, noticesPending: d.notices.size(), outboxPending: d.outbox.size(), funnel: d.funnel, connected: d.analytics.backend !== undefined
  })
}

/**
 * What the supervisor does for its hot threads (src/hot/operations.ts declares each): the cluster's claims, locks,
 * rate windows and budget parts through the node's one engine connection, moderation, notices, webhooks and
 * ClickHouse queries, logs, broadcasts, the dashboard, /metrics and ending a thread.
 */
export function supervisorOperations (d: OperationDeps, dashboard: () => Promise<Dashboard>): SupervisorHandlers {
  const clusterNode = (): ClusterNode => {
    const node = d.cluster()
    if (node === undefined) throw new Error('not a cluster node')
    return node
  }
  return {
    replicate: () => d.cluster()?.kick(),
    claim: async (name, owner, takeOverAfterMs) => await clusterNode().claim(name, owner, takeOverAfterMs),
    release: async (name, owner) => { await d.cluster()?.release(name, owner) },
    lock: async (name, owner) => await clusterNode().lock(name, owner),
    unlock: (name, n) => d.cluster()?.unlock(name, n),
    caughtUp: async () => await d.cluster()?.caughtUp() ?? false,
    lease: (ask) => d.cluster()?.lease(ask),
    budget: (campaignId, wantMicros) => d.cluster()?.leaseBudget(campaignId, wantMicros),
    book: async (base, commands) => {
      const capacity = d.capacity()
      if (capacity === undefined) throw new Error('not a cluster node')
      return await capacity.decide(base, commands)
    },
    expire: (claim) => d.capacity()?.expire(claim),
    settle: async (partition, command) => await d.cluster()?.settle(partition, command) ?? false,
    prove: async (plays) => {
      const node = d.cluster()
      return node === undefined ? undefined : await proposePlays(node, d.store, plays)
    },
    log: (line) => d.log.write(line),
    moderate: (id) => d.moderator.schedule(id),
    analyze: async (url, declaredType) => await d.moderator.analyze(url, declaredType),
    outbox: () => d.webhooks.kick(),
    notices: (due) => {
      for (const [origin, at] of due) d.notices.noted(origin, at)
      d.sender.kick()
    },
    query: async (sql, params, timeoutMs) => await d.analytics.query(sql, params, timeoutMs),
    broadcast: (channel, key, value) => d.threads().notify('broadcast', channel, key, value),
    dashboard,
    endThread: (thread) => {
      const ended = d.threads().end(thread)
      if (ended) d.store.write(() => d.outbox.append('audit.hot_thread.ended', `hot_thread:${thread}`, { actor: 'operator', thread }))
      return ended
    },
    scrape: async () => renderMetrics([d.metrics.snapshot(d.clock.now()), ...await d.threads().call('snapshot')], {
      oohbid_hot_threads: { help: 'Hot threads serving HTTP (HOT_THREADS).', value: d.config.hotThreads },
      oohbid_outbox_pending_events: { help: 'Events held in the outbox, the durable log webhooks are delivered from, until it is compacted.', value: d.outbox.size() },
      oohbid_funnel_pending_events: { help: 'Funnel events in LMDB waiting for the analytics process to ship them (to ClickHouse; on a cluster node to the funnel stream).', value: d.funnel.size() },
      oohbid_book_bids: { help: 'Stored bids in this node\'s book, waiting for their screen\'s next spot: on a cluster node, those of the partitions it owns (and those it took, until they expire).', value: d.store.bids.getCount() },
      oohbid_notices_pending: { help: 'Win, loss and billing notices and legacy notifications waiting for their (next) attempt.', value: d.notices.size() },
      oohbid_analytics_connected: { help: 'Whether the analytics process is connected to ClickHouse (1) or not (0).', value: d.analytics.backend !== undefined ? 1 : 0 },
      oohbid_analytics_lag_seconds: { help: 'Age of the oldest funnel event not yet shipped, seconds (0 when none waits): how far reports lag (on a cluster node, behind the funnel stream).', value: d.funnel.lagSeconds(d.clock.now()) }
    })
  }
}
