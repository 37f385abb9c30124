// The OpenAPI prose of this folder's routes that runs long, by `METHOD /path`: kept apart from the handlers, as
// fastify keeps a route's metadata apart from its handler. src/routes.ts gives each to its route, and refuses one
// that names no route.
export const descriptions: Record<string, string> = {
  'POST /openrtb/v2/onboard': 'Registers a seat in sandbox. Without a key, mints a legacy key returned once in data.api_key.key. With Authorization: Bearer <platform key> (from POST /v1/partner/agent/register), links that key instead and returns reused_platform_key: true. A supplied key that is unknown, revoked or expired is refused with 401 authentication_required and nothing is minted. seat_id follows ^[a-zA-Z0-9_-]{2,64}$ (the onboarding rule; the stricter ^[a-z0-9_]{3,40}$ also stated by the spec is a subset) and is unique forever, case-insensitively, including suspended and revoked seats. Limited to 5 requests per hour per client address, failures included.'
}
