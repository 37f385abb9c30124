import { lookup as dnsLookup, Resolver, type LookupAddress } from 'node:dns'
import type { LookupFunction } from 'node:net'
import { isPublicAddress } from './url-guard.js'

type Resolve = (hostname: string, callback: (err: Error | null, addresses: LookupAddress[]) => void) => void

/** The system resolver (getaddrinfo: /etc/hosts, then DNS), every address of the name. */
const system: Resolve = (hostname, callback) => {
  dnsLookup(hostname, { all: true }, (err, addresses) => callback(err, err ? [] : addresses))
}

/** Asks the given DNS servers directly (A and AAAA), bypassing /etc/hosts and the system's configuration. */
function viaServers (servers: string[]): Resolve {
  const resolver = new Resolver({ timeout: 2000, tries: 2 })
  resolver.setServers(servers)
  const ask = (hostname: string, family: 4 | 6) => new Promise<LookupAddress[]>((resolve) => {
    const done = (err: Error | null, list: string[]) => resolve(err ? [] : list.map((address) => ({ address, family })))
    if (family === 4) resolver.resolve4(hostname, done)
    else resolver.resolve6(hostname, done)
  })
  return (hostname, callback) => {
    Promise.all([ask(hostname, 4), ask(hostname, 6)]).then(([v4, v6]) => {
      const all = [...v4, ...v6]
      if (all.length === 0) return callback(Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' }), [])
      callback(null, all)
    }, (err: Error) => callback(err, []))
  }
}

/**
 * A DNS lookup that refuses private, loopback, link-local and reserved answers, used as the socket's lookup so the
 * check applies to the address actually connected to (a name that resolves publicly once and privately the next
 * time, DNS rebinding, is still refused). Every address of the name must be public, not just the one tried first.
 * With `servers` (DNS_SERVERS) names are resolved by those DNS servers instead of the system resolver.
 */
export function guardedLookup (allowPrivate: boolean, refuse: (message: string) => Error = (m) => new Error(m), servers: string[] = []): LookupFunction {
  const resolve = servers.length > 0 ? viaServers(servers) : system
  return (hostname, options, callback) => {
    resolve(hostname, (err, addresses) => {
      if (err) return callback(err, '', 0)
      const family = (options as { family?: number }).family
      const list = family === 4 || family === 6 ? addresses.filter((a) => a.family === family) : addresses
      const bad = list.find((a) => !allowPrivate && !isPublicAddress(a.address))
      if (bad !== undefined) return callback(refuse(`${hostname} resolves to ${bad.address}, which is not a public address`), '', 0)
      const first = list[0]
      if (first === undefined) return callback(Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' }), '', 0)
      if ((options as { all?: boolean }).all) return (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, list)
      callback(null, first.address, first.family)
    })
  }
}
