// The OpenAPI prose of this folder's routes that runs long, by `METHOD /path`: kept apart from the handlers, as
// fastify keeps a route's metadata apart from its handler. src/routes.ts gives each to its route, and refuses one
// that names no route.
export const descriptions: Record<string, string> = {
  'POST /openrtb/v2/forecast': 'targeting: venue_type, country (alpha-2), state, city (partial); omitted means all inventory. budget_usd at least 0.01 (400 invalid_budget). start_date defaults to tomorrow and may not be in the past; end_date defaults to 7 days after start_date (400 invalid_date; at most 366 days). pricing_model: cpm (default) or vas_cpm (also prices per 1000 attention seconds). Matching no screen answers only {message}. confidence: high when 50%+ of matching screens have 7 days of data, medium when 20%+ have some, else low; without history the supply is the screens\' open capacity and the price their floor. The history is computed by ClickHouse and cached for REPORT_CACHE_SECONDS: a targeting not asked before waits for it (up to REPORT_WAIT_MS, then 202 pending with Retry-After).'
}
