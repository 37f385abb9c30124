// The OpenAPI prose of this folder's routes that runs long, by `METHOD /path`: kept apart from the handlers, as
// fastify keeps a route's metadata apart from its handler. src/routes.ts gives each to its route, and refuses one
// that names no route.
export const descriptions: Record<string, string> = {
  'PUT /uploads/:token': 'The URL itself is the credential (HMAC-signed creative id and expiry): no API key. Send the declared Content-Type; at most MAX_CREATIVE_BYTES. 403 not_authorized for a tampered URL, 410 expired after UPLOAD_URL_TTL_SECONDS, 409 invalid_transition once confirmed. A second PUT before confirm replaces the bytes.'
}
