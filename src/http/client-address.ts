import type { HttpResponse } from 'uWebSockets.js'

// Who sent a request: the socket's address, or the client a trusted proxy names in X-Forwarded-For.

/** The client address: the socket's, or the nearest untrusted X-Forwarded-For hop when the socket is a trusted proxy. */
export function clientIp (socketIp: string, forwarded: string | undefined, trusted: string[]): string {
  if (forwarded === undefined || !trusted.includes(socketIp)) return socketIp
  const hops = forwarded.split(',').map((h) => h.trim()).filter(Boolean)
  for (let i = hops.length - 1; i >= 0; i--) if (!trusted.includes(hops[i]!)) return hops[i]!
  return hops[0] ?? socketIp
}

function isZero (b: Uint8Array, length: number): boolean {
  for (let i = 0; i < length; i++) if (b[i] !== 0) return false
  return true
}

/** The socket's address: IPv4 clients (shown by uWS as IPv4-mapped IPv6) read straight from the 16 bytes. */
export function socketIp (res: HttpResponse): string {
  const b = new Uint8Array(res.getRemoteAddress())
  if (b.length === 16 && b[10] === 255 && b[11] === 255 && isZero(b, 10)) return `${b[12]}.${b[13]}.${b[14]}.${b[15]}`
  if (b.length === 4) return `${b[0]}.${b[1]}.${b[2]}.${b[3]}`
  return normalizeIp(Buffer.from(res.getRemoteAddressAsText()).toString())
}

function normalizeIp (text: string): string {
  // uWS reports IPv4 clients of a dual-stack socket as IPv4-mapped IPv6.
  const mapped = /^(?:0{1,4}:){5}ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/i.exec(text)
  if (mapped) {
    const hi = parseInt(mapped[1]!, 16)
    const lo = parseInt(mapped[2]!, 16)
    return `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`
  }
  return text.replace(/^::ffff:/i, '')
}
