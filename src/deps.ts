import type { Analytics } from './analytics/client.js'
import type { ResultCache } from './analytics/results.js'
import type { Authenticator } from './auth/authenticate.js'
import type { KeySealer } from './auth/sealed-keys.js'
import type { FunnelLog } from './events/funnel.js'
import type { Notices } from './notify/notices.js'
import type { Clock } from './clock.js'
import type { ResolvedConfig } from './config.js'
import type { ImpIds } from './hot/adslots/imp-ids.js'
import type { Bookings } from './inventory/bookings.js'
import type { Inventory } from './inventory/inventory.js'
import type { Moderator } from './moderation/moderator.js'
import type { ProofSigner } from './proof/signer.js'
import type { ObjectStore } from './store/objects.js'
import type { Outbox } from './store/outbox.js'
import type { Store } from './store/store.js'
import type { DeliveryLog } from './webhooks/delivery-log.js'

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
  moderator: Moderator
  sealer: KeySealer
  proofSigner: ProofSigner
  notices: Notices
  deliveries: DeliveryLog
  funnel: FunnelLog
  analytics: Analytics
  reports: ResultCache
}
