import type { Authenticator } from '../auth/authenticate.js'
import type { Clock } from '../clock.js'
import type { ResolvedConfig } from '../config.js'
import type { Outbox } from '../store/outbox.js'
import type { Store } from '../store/store.js'

/** What control-plane routes are built from. */
export interface ControlDeps {
  config: ResolvedConfig
  clock: Clock
  store: Store
  outbox: Outbox
  auth: Authenticator
}
