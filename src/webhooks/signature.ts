import { hmacHex } from '../auth/hmac.js'

/**
 * X-Service-Signature of a webhook attempt: t=<unix seconds>,v0=<hex>,v1=<hex>. v1 is the Stripe-style signature,
 * HMAC-SHA256 with the secret over "<t>.<raw body>", which any such verifier checks. v0 is HMAC-SHA256 over
 * "<t>.<delivery id>.<raw body>": it also binds X-Service-Delivery-Id, which v1 leaves unsigned, so a receiver that
 * deduplicates on the id can trust it too.
 */
export function webhookSignature (secret: string, t: number, deliveryId: string, body: string): string {
  return `t=${t},v0=${hmacHex(secret, String(t), deliveryId, body)},v1=${hmacHex(secret, String(t), body)}`
}
