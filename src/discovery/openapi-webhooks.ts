import { schemas } from '../generated/schemas.js'
import { retrySchedule } from '../webhooks/kind.js'

type Json = Record<string, unknown>

const ref = (title: string): Json => ({ $ref: `#/components/schemas/${title}` })

const header = (name: string, description: string, pattern?: string): Json =>
  ({ name, in: 'header', required: true, description, schema: { type: 'string', ...(pattern !== undefined ? { pattern } : {}) } })

/**
 * x-webhooks (the OpenAPI 3.1 `webhooks` object, as an extension of this 3.0 document): every event the service
 * sends, with its headers and its body, data.object being the schema whose x-events names the event.
 */
export function webhookDocs (): Json {
  const objects = (Object.values(schemas) as Array<{ title: string, description?: string, 'x-events'?: readonly string[] }>).flatMap((s) => (s['x-events'] ?? []).map((event) => [event, s] as const))
  const subscribable = new Set<string>(schemas.WebhookEventType.enum)
  const general = new Set<string>(schemas.GeneralEventType.enum)
  const out: Json = {}
  for (const [event, object] of objects.sort((a, b) => a[0].localeCompare(b[0]))) {
    const who = [subscribable.has(event) ? 'subscriptions that list it' : undefined, general.has(event) ? 'the seat\'s webhook_url' : undefined].filter(Boolean).join(' and ')
    out[event] = {
      post: {
        operationId: `webhook${event.replace(/(^|[._])(\w)/g, (_, _sep: string, c: string) => c.toUpperCase())}`,
        summary: `${event}, sent to ${who}`,
        description: object.description,
        tags: ['Webhooks'],
        parameters: [
          header('X-Service-Event', 'The event name.'),
          header('X-Service-Delivery-Id', 'del_...; the same on every attempt of this delivery: deduplicate on it.', '^del_[0-9a-f]{24}$'),
          header('X-Service-Timestamp', 'Unix seconds of this attempt (equals delivered_at).'),
          header('X-Service-Signature', 't=<unix seconds>,v0=<hex>,v1=<hex>: v1 = hex HMAC-SHA256(secret, "<t>.<raw body>"); v0 = hex HMAC-SHA256(secret, "<t>.<delivery id>.<raw body>").'),
          header('X-Service-Attempt', '1 for the first attempt, then 2, 3, ...'),
          { ...header('X-Service-Webhook-Id', 'Deliveries to a subscription: its webhook_id (its whsec_ secret signs).'), required: false },
          { ...header('X-Service-Key-Prefix', 'Deliveries to webhook_url: the prefix of the API key that signs.'), required: false }
        ],
        requestBody: {
          required: true,
          content: { 'application/json': { schema: { allOf: [ref('WebhookPayload'), { type: 'object', properties: { event: { type: 'string', enum: [event] }, data: { type: 'object', properties: { object: ref(object.title) } } } }] } } }
        },
        responses: {
          '2XX': { description: 'Acknowledged: not sent again.' },
          default: { description: `Anything else, a redirect, a timeout or a refused connection: retried after ${retrySchedule()} (each +-20%), with the same X-Service-Delivery-Id.` }
        }
      }
    }
  }
  return out
}
