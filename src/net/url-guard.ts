import { isIP } from 'node:net'
import ipaddr from 'ipaddr.js'

/**
 * IPv6's global unicast allocation (IANA IPv6 Address Space registry, 2000::/3). Everything outside it is local,
 * multicast or reserved by the IETF (::/8 holds the mapped, compatible and translated IPv4 forms, 100::/64 discard).
 */
const GLOBAL_UNICAST_V6 = ipaddr.parseCIDR('2000::/3')

/**
 * Whether an address (IPv4 or IPv6 text) is one a callback may reach: outside every IANA special-purpose block,
 * private, shared, loopback, link-local, documentation, benchmarking, multicast and reserved space, and for IPv6
 * inside global unicast. The ranges are ipaddr.js's table, maintained against the IANA registries, not ours. Blocks
 * the registry marks globally reachable (AS112, AMT, PCP and TURN anycast, ORCHIDv2) are refused too: they are
 * protocol infrastructure, never a receiver. Addresses that embed IPv4 (mapped, NAT64, 6to4, Teredo) are refused
 * whole: a receiver publishes its IPv4 address as such.
 */
export function isPublicAddress (ip: string): boolean {
  // Node's parser first: ipaddr.js also reads shorthand IPv4 (127.1, 0x7f.1) that is no address on the wire.
  if (isIP(ip) === 0) return false
  const address = ipaddr.parse(ip)
  if (address.range() !== 'unicast') return false
  return address.kind() === 'ipv4' || address.match(GLOBAL_UNICAST_V6)
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
