// The OpenAPI prose of this folder's routes that runs long, by `METHOD /path`: kept apart from the handlers, as
// fastify keeps a route's metadata apart from its handler. src/routes.ts gives each to its route, and refuses one
// that names no route.
export const descriptions: Record<string, string> = {
  'GET /metrics': 'Requests by route and status (all hot threads together, and per thread), latency histograms, rate-limit rejections, event-loop delay, memory, LMDB write transactions and the seconds they held its one writer lock (per thread), the outbox, funnel-log and notice backlogs, notice attempts, and whether ClickHouse is connected. Gathered from every thread when scraped, so the answer is held for that round trip (no pipelining on this route).'
}
