import { keyRoutes } from './control/accounts/keys.js'
import { onboardRoute } from './control/accounts/onboard.js'
import { seatRoute } from './control/accounts/seat.js'
import { adminAuditRoute } from './control/admin/audit.js'
import { adminCreativeRoutes } from './control/admin/creatives.js'
import { adminDealRoutes } from './control/admin/deals.js'
import { dashboardRoutes } from './control/admin/dashboard.js'
import { campaignRoutes } from './control/campaigns/campaigns.js'
import { dealRoutes } from './control/campaigns/deals.js'
import { reservationRoutes } from './control/campaigns/reservations.js'
import { creativeRoutes } from './control/creatives/routes.js'
import { adminKeyRoutes } from './control/admin/keys.js'
import { adminPlatformRoutes } from './control/admin/platform.js'
import { adminSeatRoutes } from './control/admin/seats.js'
import { buildOpenApi } from './control/discovery/openapi.js'
import { opsRoutes } from './control/discovery/ops.js'
import { publicFileRoutes } from './control/discovery/public-files.js'
import { catalogRoute } from './control/inventory/catalog.js'
import { discoverRoute } from './control/inventory/discover.js'
import { screenRoutes } from './control/inventory/screens.js'
import { deviceRoutes } from './control/partner/devices.js'
import { partnerRegistrationRoutes } from './control/partner/register.js'
import { partnerScreenRoutes } from './control/partner/screens.js'
import type { Deps } from './deps.js'
import { adslotsRoute } from './hot/adslots/route.js'
import { bidRoute, statsRoute } from './hot/bid/route.js'
import { partnerAnalyticsRoutes } from './control/partner/analytics.js'
import { impressionRoutes } from './control/partner/impressions.js'
import { proofOfPlayRoute } from './control/proof/report.js'
import { proofRoutes } from './control/proof/routes.js'
import { deliveryRoutes } from './control/webhooks/deliveries.js'
import { webhookRoutes } from './control/webhooks/subscriptions.js'
import { playerRoutes } from './hot/player/routes.js'
import { vastRoutes } from './hot/player/vast-routes.js'
import { assetRoute } from './hot/assets/route.js'
import { bidderRoutes } from './hot/bidder/route.js'
import { adminBidderAliasRoutes } from './control/admin/bidder-aliases.js'
import { forecastRoute } from './control/reporting/forecast.js'
import { marketRoutes } from './control/reporting/market.js'
import { reportRoutes } from './control/reporting/reports.js'
import type { RouteDef } from './http/route.js'

/** Every route of the service, hot paths first. The OpenAPI document describes exactly this list. */
export function allRoutes (deps: Deps): RouteDef[] {
  let openapi = ''
  const routes: RouteDef[] = [
    bidRoute(deps),
    statsRoute(deps),
    adslotsRoute(deps),
    ...playerRoutes(deps),
    ...vastRoutes(deps),
    ...proofRoutes(deps),
    ...deliveryRoutes(deps),
    ...webhookRoutes(deps),
    proofOfPlayRoute(deps),
    ...bidderRoutes(deps),
    assetRoute(deps),
    onboardRoute(deps),
    seatRoute(deps),
    ...keyRoutes(deps),
    ...screenRoutes(deps),
    discoverRoute(deps),
    ...creativeRoutes(deps),
    ...campaignRoutes(deps),
    ...reservationRoutes(deps),
    ...dealRoutes(deps),
    ...partnerRegistrationRoutes(deps),
    ...deviceRoutes(deps),
    ...impressionRoutes(deps),
    ...partnerAnalyticsRoutes(deps),
    ...partnerScreenRoutes(deps),
    catalogRoute(deps),
    forecastRoute(deps),
    ...reportRoutes(deps),
    ...marketRoutes(deps),
    ...adminSeatRoutes(deps),
    ...adminKeyRoutes(deps),
    ...adminPlatformRoutes(deps),
    ...dashboardRoutes(deps),
    ...adminCreativeRoutes(deps),
    ...adminDealRoutes(deps),
    ...adminBidderAliasRoutes(deps),
    adminAuditRoute(deps),
    ...publicFileRoutes(deps),
    ...opsRoutes(deps, () => openapi)
  ]
  openapi = JSON.stringify(buildOpenApi(routes, deps.config.baseUrl))
  return routes
}
