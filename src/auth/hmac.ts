import { createHmac } from 'node:crypto'

/** Hex HMAC-SHA256 over the parts joined by dots: the "<t>.<raw body>" text every signature of this service covers. */
export function hmacHex (secret: string, ...parts: Array<string | Buffer>): string {
  const mac = createHmac('sha256', secret)
  parts.forEach((part, i) => {
    if (i > 0) mac.update('.')
    mac.update(part)
  })
  return mac.digest('hex')
}

/**
 * A Stripe-style signature header value, t=<unix>,v1=<hex HMAC-SHA256 over "<t>.<body>">: how exchanges sign their
 * bid requests and how legacy notifications are signed.
 */
export function signRequest (secret: string, unixSeconds: number, body: string | Buffer): string {
  return `t=${unixSeconds},v1=${hmacHex(secret, String(unixSeconds), body)}`
}
