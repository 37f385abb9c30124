import type { ResultCache } from './analytics/results.js'
import type { AnalyticsSource } from './analytics/source.js'
import type { Authenticator } from './auth/authenticate.js'
import type { KeySealer } from './auth/sealed-keys.js'
import type { FunnelLog } from './events/funnel.js'
import type { Notices } from './notify/notices.js'
import type { Clock } from './clock.js'
import type { ResolvedConfig } from './config.js'
import type { ImpIds } from './inventory/adslots/imp-ids.js'
import type { Inventory } from './inventory/inventory.js'
import type { ProofSigner } from './proof/signer.js'
import type { ObjectStore } from './store/objects.js'
import type { Outbox } from './store/outbox.js'
import type { Store } from './store/store.js'
import type { DeliveryLog } from './webhooks/delivery-log.js'
import type { Broadcast } from './hot/broadcast.js'
import type { Dashboard } from './generated/types.js'
import type { Metrics } from './http/metrics.js'
import type { Journal } from './store/journal.js'
import type { HotEntry } from './hot/journal.js'
import type { ScreenClaims } from './bidding/auction/claims.js'
import type { ModerationReply } from './moderation/types.js'

/**
 * Where a route hands a creative for moderation, and has an asset analyzed by the same models (content standards'
 * calibration): the supervisor's moderator, reached from a hot thread by message.
 */
export interface ModerationQueue {
  schedule (creativeId: string): void
  analyze (url: string, declaredType: string): Promise<ModerationReply>
}

/** What route modules (hot and control) are built from. */
export interface Deps {
  config: ResolvedConfig
  clock: Clock
  store: Store
  outbox: Outbox
  auth: Authenticator
  inventory: Inventory
  impIds: ImpIds
  objects: ObjectStore
  moderator: ModerationQueue
  sealer: KeySealer
  proofSigner: ProofSigner
  notices: Notices
  deliveries: DeliveryLog
  funnel: FunnelLog
  /**
   * This thread's journal: what POST /bid writes, and the writes of spot decisions, durable at once and applied to
   * LMDB with the rest of their turn (src/hot/journal.ts).
   */
  journal: Journal<HotEntry>
  /** One spot decision per screen at a time, across hot threads (shared memory). */
  claims: ScreenClaims
  analytics: AnalyticsSource
  reports: ResultCache
  /** This thread's metrics: routes count what they decide (spots by tier, bids by outcome). */
  metrics: Metrics
  /** The Prometheus text of every thread's metrics together (/metrics). */
  scrape: () => Promise<string>
  /** The operator dashboard's numbers, gathered from every thread (/admin/v1/dashboard). */
  dashboard: () => Promise<Dashboard>
  /** Ends a hot thread at once, audited, once this answer is on its way; false when that thread is restarting. */
  endThread: (thread: number) => Promise<boolean>
  /** Answers computed here, handed to the other hot threads. */
  shared: Broadcast
  /**
   * What /readyz adds about this node's replication (src/cluster/readiness.ts), and why it is not ready when it is
   * not; nothing on a node alone.
   */
  readiness: () => { checks: Record<string, string>, unready?: string }
}
