import { lookup as dnsLookup, type LookupAddress } from 'node:dns'
import type { LookupFunction } from 'node:net'
import { isPublicAddress } from './url-guard.js'

/**
 * A DNS lookup that refuses private, loopback, link-local and reserved answers, used as the socket's lookup so the
 * check applies to the address actually connected to (a name that resolves publicly once and privately the next
 * time, DNS rebinding, is still refused).
 */
export function guardedLookup (allowPrivate: boolean, refuse: (message: string) => Error = (m) => new Error(m)): LookupFunction {
  return (hostname, options, callback) => {
    dnsLookup(hostname, { ...options, all: true }, (err, addresses) => {
      if (err) return callback(err, '', 0)
      const list = addresses as LookupAddress[]
      const bad = list.find((a) => !allowPrivate && !isPublicAddress(a.address))
      if (bad !== undefined) return callback(refuse(`${hostname} resolves to ${bad.address}, which is not a public address`), '', 0)
      const first = list[0]!
      if ((options as { all?: boolean }).all) return (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, list)
      callback(null, first.address, first.family)
    })
  }
}

