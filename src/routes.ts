import { keyRoutes } from './accounts/routes/keys.js'
import { onboardRoute } from './accounts/routes/onboard.js'
import { seatRoute } from './accounts/routes/seat.js'
import { adminAuditRoute } from './admin/audit.js'
import { mcpRoutes } from './agents/routes/mcp.js'
import { adminCreativeRoutes } from './admin/creatives.js'
import { adminDealRoutes } from './admin/deals.js'
import { dashboardRoutes } from './admin/dashboard.js'
import { adminHotThreadRoutes } from './admin/hot-threads.js'
import { campaignRoutes } from './campaigns/routes/campaigns.js'
import { dealRoutes } from './campaigns/routes/deals.js'
import { reservationRoutes } from './campaigns/routes/reservations.js'
import { creativeRoutes } from './creatives/routes/creatives.js'
import { adminKeyRoutes } from './admin/keys.js'
import { adminPlatformRoutes } from './admin/platform.js'
import { adminSeatRoutes } from './admin/seats.js'
import { buildOpenApi } from './discovery/openapi.js'
import { opsRoutes } from './discovery/routes/ops.js'
import { publicFileRoutes } from './discovery/routes/public-files.js'
import { catalogRoute } from './inventory/routes/catalog.js'
import { discoverRoute } from './inventory/routes/discover.js'
import { screenRoutes } from './inventory/routes/screens.js'
import { deviceRoutes } from './inventory/routes/partner-devices.js'
import { partnerRegistrationRoutes } from './inventory/routes/partner-register.js'
import { partnerScreenRoutes } from './inventory/routes/partner-screens.js'
import type { Deps } from './deps.js'
import { adslotsRoute } from './inventory/routes/adslots.js'
import { bidRoute, statsRoute } from './bidding/routes/bid.js'
import { partnerAnalyticsRoutes } from './reporting/routes/partner-analytics.js'
import { impressionRoutes } from './proof/routes/impressions.js'
import { proofOfPlayRoute } from './proof/routes/proof-of-play.js'
import { proofRoutes } from './proof/routes/proofs.js'
import { deliveryRoutes } from './webhooks/routes/deliveries.js'
import { webhookRoutes } from './webhooks/routes/subscriptions.js'
import { playerRoutes } from './player/routes/player.js'
import { vastRoutes } from './player/routes/vast.js'
import { assetRoute } from './player/routes/assets.js'
import { bidderRoutes } from './exchange/routes/bidder.js'
import { adminBidderAliasRoutes } from './admin/bidder-aliases.js'
import { forecastRoute } from './reporting/routes/forecast.js'
import { marketRoutes } from './reporting/routes/market.js'
import { reportRoutes } from './reporting/routes/reports.js'
import type { RouteDef } from './http/route.js'
import { descriptions as accountsProse } from './accounts/routes/descriptions.js'
import { descriptions as adminProse } from './admin/descriptions.js'
import { descriptions as biddingProse } from './bidding/routes/descriptions.js'
import { descriptions as campaignsProse } from './campaigns/routes/descriptions.js'
import { descriptions as creativesProse } from './creatives/routes/descriptions.js'
import { descriptions as discoveryProse } from './discovery/routes/descriptions.js'
import { descriptions as exchangeProse } from './exchange/routes/descriptions.js'
import { descriptions as inventoryProse } from './inventory/routes/descriptions.js'
import { descriptions as playerProse } from './player/routes/descriptions.js'
import { descriptions as proofProse } from './proof/routes/descriptions.js'
import { descriptions as reportingProse } from './reporting/routes/descriptions.js'
import { descriptions as agentsProse } from './agents/routes/descriptions.js'

/** Every route of the service, hot paths first. The OpenAPI document describes exactly this list. */
export function allRoutes (deps: Deps): RouteDef[] {
  let openapi: string | undefined
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
    ...adminHotThreadRoutes(deps),
    ...adminCreativeRoutes(deps),
    ...adminDealRoutes(deps),
    ...adminBidderAliasRoutes(deps),
    adminAuditRoute(deps),
    ...mcpRoutes(deps),
    ...publicFileRoutes(deps),
    // Built when first asked for: every thread builds the routes, and the document costs 50-70 ms of each start.
    ...opsRoutes(deps, () => openapi ??= JSON.stringify(buildOpenApi(routes, deps.config.baseUrl)))
  ]
  return withDescriptions(routes)
}

/** Each route's long OpenAPI prose, kept in its folder's descriptions.ts, by `METHOD /path`. */
const DESCRIPTIONS: Record<string, string> = { ...accountsProse, ...adminProse, ...biddingProse, ...campaignsProse, ...creativesProse, ...discoveryProse, ...exchangeProse, ...inventoryProse, ...playerProse, ...proofProse, ...reportingProse, ...agentsProse }

/** Gives each route its prose; a description that names no route is a mistake, refused at start. */
function withDescriptions (routes: RouteDef[]): RouteDef[] {
  const unused = new Set(Object.keys(DESCRIPTIONS))
  for (const r of routes) {
    const key = `${r.method.toUpperCase()} ${r.path}`
    const prose = DESCRIPTIONS[key]
    if (prose === undefined) continue
    r.description = prose
    unused.delete(key)
  }
  if (unused.size > 0) throw new Error(`descriptions.ts names no route: ${[...unused].join(', ')}`)
  return routes
}
