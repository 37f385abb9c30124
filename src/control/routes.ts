import type { Metrics } from '../http/metrics.js'
import type { RouteDef } from '../http/route.js'
import type { Outbox } from '../store/outbox.js'
import { keyRoutes } from './accounts/keys.js'
import { onboardRoute } from './accounts/onboard.js'
import { seatRoute } from './accounts/seat.js'
import { adminAuditRoute } from './admin/audit.js'
import { adminKeyRoutes } from './admin/keys.js'
import { adminSeatRoutes } from './admin/seats.js'
import type { ControlDeps } from './deps.js'
import { buildOpenApi } from './discovery/openapi.js'
import { opsRoutes } from './discovery/ops.js'
import { publicFileRoutes } from './discovery/public-files.js'
import { partnerRegistrationRoutes } from './partner/register.js'

/** Every route of the service. The OpenAPI document describes exactly this list. */
export function allRoutes (deps: ControlDeps, metrics: Metrics, outbox: Outbox): RouteDef[] {
  let openapi = ''
  const routes: RouteDef[] = [
    onboardRoute(deps),
    seatRoute(deps),
    ...keyRoutes(deps),
    ...partnerRegistrationRoutes(deps),
    ...adminSeatRoutes(deps),
    ...adminKeyRoutes(deps),
    adminAuditRoute(deps),
    ...publicFileRoutes(deps),
    ...opsRoutes(deps, metrics, outbox, () => openapi)
  ]
  openapi = JSON.stringify(buildOpenApi(routes, deps.config.baseUrl))
  return routes
}
