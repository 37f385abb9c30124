import type { ResultCache } from './analytics/results.js'
import type { Params } from './analytics/sql.js'
import type { Authenticator } from './auth/authenticate.js'
import type { KeySealer } from './auth/sealed-keys.js'
import type { FunnelLog } from './events/funnel.js'
import type { Notices } from './notify/notices.js'
import type { Clock } from './clock.js'
import type { ResolvedConfig } from './config.js'
import type { ImpIds } from './hot/adslots/imp-ids.js'
import type { Bookings } from './inventory/bookings.js'
import type { Inventory } from './inventory/inventory.js'
import type { ProofSigner } from './proof/signer.js'
import type { ObjectStore } from './store/objects.js'
import type { Outbox } from './store/outbox.js'
import type { Store } from './store/store.js'
import type { DeliveryLog } from './webhooks/delivery-log.js'
import type { Broadcast } from './threads/broadcast.js'
import type { Dashboard } from './generated/types.js'
import type { Metrics } from './http/metrics.js'

/** Where a route hands a creative for moderation: the supervisor's moderator, reached from a hot thread by message. */
export interface ModerationQueue {
  schedule (creativeId: string): void
}

/** ClickHouse as routes see it: queries (answered by the supervisor's analytics process) and whether it is connected. */
export interface AnalyticsSource {
  /** Rows of a SELECT whose values are {name:Type} placeholders (src/analytics/sql.ts), with their values. */
  query (sql: string, params?: Params, timeoutMs?: number): Promise<Array<Record<string, unknown>>>
  /** The backend once connected ('chdb' or 'server'), else undefined. */
  readonly backend: 'chdb' | 'server' | undefined
  readonly lastError: string | undefined
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
  bookings: Bookings
  objects: ObjectStore
  moderator: ModerationQueue
  sealer: KeySealer
  proofSigner: ProofSigner
  notices: Notices
  deliveries: DeliveryLog
  funnel: FunnelLog
  analytics: AnalyticsSource
  reports: ResultCache
  /** This thread's metrics: routes count what they decide (spots by tier, bids by outcome). */
  metrics: Metrics
  /** The Prometheus text of every thread's metrics together (/metrics). */
  scrape: () => Promise<string>
  /** The operator dashboard's numbers, gathered from every thread (/admin/v1/dashboard). */
  dashboard: () => Promise<Dashboard>
  /** Answers computed here, handed to the other hot threads. */
  shared: Broadcast
}
