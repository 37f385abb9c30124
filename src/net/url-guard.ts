import { isIP } from 'node:net'

/** IPv4 ranges no callback may target (RFC 6890 special-purpose and private blocks). */
const BLOCKED_V4: Array<[number, number]> = [
  ['0.0.0.0', 8], ['10.0.0.0', 8], ['100.64.0.0', 10], ['127.0.0.0', 8], ['169.254.0.0', 16], ['172.16.0.0', 12],
  ['192.0.0.0', 24], ['192.0.2.0', 24], ['192.88.99.0', 24], ['192.168.0.0', 16], ['198.18.0.0', 15],
  ['198.51.100.0', 24], ['203.0.113.0', 24], ['224.0.0.0', 4], ['240.0.0.0', 4]
].map(([base, bits]) => [v4ToInt(base as string), bits as number])

function v4ToInt (ip: string): number {
  return ip.split('.').reduce((n, part) => n * 256 + Number(part), 0)
}

function blockedV4 (ip: string): boolean {
  const n = v4ToInt(ip)
  return BLOCKED_V4.some(([base, bits]) => Math.floor(n / 2 ** (32 - bits)) === Math.floor(base / 2 ** (32 - bits)))
}

function expandV6 (ip: string): number[] {
  let text = ip
  const v4 = /(\d+\.\d+\.\d+\.\d+)$/.exec(text)
  if (v4) {
    const n = v4ToInt(v4[1]!)
    text = text.slice(0, v4.index) + `${(n >>> 16).toString(16)}:${(n & 0xffff).toString(16)}`
  }
  const [head, tail] = text.split('::') as [string, string | undefined]
  const h = head ? head.split(':') : []
  const tl = tail !== undefined && tail !== '' ? tail.split(':') : []
  const fill = tail === undefined ? [] : new Array(8 - h.length - tl.length).fill('0')
  return [...h, ...fill, ...tl].map((p) => parseInt(p, 16))
}

function blockedV6 (ip: string): boolean {
  const w = expandV6(ip.replace(/%.*$/, ''))
  if (w.length !== 8 || w.some((x) => Number.isNaN(x))) return true
  if (w.slice(0, 7).every((x) => x === 0)) return true // :: and ::1
  if (w.slice(0, 5).every((x) => x === 0) && (w[5] === 0xffff || w[5] === 0)) {
    return blockedV4(`${w[6]! >> 8}.${w[6]! & 255}.${w[7]! >> 8}.${w[7]! & 255}`) // IPv4-mapped and -compatible
  }
  const first = w[0]!
  if (first === 0x64 && w[1] === 0xff9b) return blockedV4(`${w[6]! >> 8}.${w[6]! & 255}.${w[7]! >> 8}.${w[7]! & 255}`) // NAT64
  return (first & 0xfe00) === 0xfc00 || // unique local
    (first & 0xffc0) === 0xfe80 || // link-local
    (first & 0xff00) === 0xff00 || // multicast
    (first === 0x2001 && w[1] === 0x0db8) || // documentation
    first === 0x2002 // 6to4 can wrap any IPv4
}

/** Whether an address (IPv4 or IPv6 text) is outside every private, loopback, link-local and reserved range. */
export function isPublicAddress (ip: string): boolean {
  const family = isIP(ip)
  if (family === 4) return !blockedV4(ip)
  if (family === 6) return !blockedV6(ip)
  return false
}

/**
 * Why a callback URL is refused, or undefined when it is acceptable before DNS: https only, a real host name, no
 * localhost names, no literal address in a non-public range. WHATWG URL parsing first normalizes decimal, octal and
 * hex IPv4 forms (http://2130706433/, http://0x7f.1/) to dotted quads, so those are caught too. Names that resolve to
 * private addresses are refused again at connect time.
 */
export function callbackUrlProblem (raw: string, allowLoopback = false, schemes: readonly string[] = ['https:']): string | undefined {
  let url: URL
  try {
    url = new URL(raw)
  } catch {
    return 'is not a valid URL'
  }
  if (!schemes.includes(url.protocol)) return schemes.length === 1 ? `must use ${schemes[0]!.slice(0, -1)}` : `must use ${schemes.map((p) => p.slice(0, -1)).join(' or ')}`
  if (url.username !== '' || url.password !== '') return 'must not carry credentials'
  // A trailing dot names the same host (localhost. is localhost).
  const host = url.hostname.replace(/^\[|\]$/g, '').replace(/\.+$/, '').toLowerCase()
  if (host === '') return 'needs a host'
  if (allowLoopback) return undefined
  if (host === 'localhost' || host.endsWith('.localhost') || host.endsWith('.local') || host.endsWith('.internal')) return 'must not point at a local host name'
  if (isIP(host) !== 0) return isPublicAddress(host) ? undefined : 'must not point at a private, loopback or reserved address'
  if (!host.includes('.')) return 'needs a fully qualified host name'
  return undefined
}
