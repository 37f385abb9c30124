import { timingSafeEqual } from 'node:crypto'
import { BlockList, isIP } from 'node:net'
import { hmacHex } from '../auth/hmac.js'
import type { KeySealer } from '../auth/sealed-keys.js'
import { ApiError } from '../errors.js'
import type { BidderAliasRecord } from './records.js'
import type { Store } from '../store/store.js'
import { Derived } from '../store/read-cache.js'

/** How old a signed request's timestamp may be, either way, in seconds. */
export const SIGNATURE_TOLERANCE_S = 300

/** An alias address or CIDR block, or why it is not one. */
export function cidrProblem (entry: string): string | undefined {
  const [address, bits, extra] = entry.split('/')
  const family = isIP(address ?? '')
  if (family === 0 || extra !== undefined) return `${entry} is not an IP address or CIDR block`
  if (bits === undefined) return undefined
  const n = Number(bits)
  if (!/^\d+$/.test(bits) || n > (family === 4 ? 32 : 128)) return `${entry} has an invalid prefix length`
  return undefined
}

function blockList (entries: string[]): BlockList {
  const list = new BlockList()
  for (const entry of entries) {
    const [address, bits] = entry.split('/') as [string, string | undefined]
    const type = isIP(address) === 4 ? 'ipv4' : 'ipv6'
    if (bits === undefined) list.addAddress(address, type)
    else list.addSubnet(address, Number(bits), type)
  }
  return list
}

interface Compiled {
  record: BidderAliasRecord
  allow: BlockList
  /** Addresses already checked against allow: an exchange calls from a handful, and BlockList.check allocates. */
  seen: Map<string, boolean>
  secret: string | undefined
}

/** Stores a bidder alias's configuration. Call inside Store.write. */
export function saveAlias (store: Store, record: BidderAliasRecord): void {
  store.aliases.putSync(record.alias, record)
}

/** Removes a bidder alias: its endpoint answers 404 from then on. Call inside Store.write. */
export function removeAlias (store: Store, alias: string): void {
  store.aliases.removeSync(alias)
}

/**
 * The bidder aliases as the hot path needs them: each alias's allowlist compiled into a BlockList (Node's own CIDR
 * matcher) and its signing secret unsealed once, rebuilt when the aliases table changes.
 */
export class AliasGuard {
  readonly #store: Store
  readonly #sealer: KeySealer
  readonly #compiled: Derived<string, Compiled>

  constructor (store: Store, sealer: KeySealer) {
    this.#store = store
    this.#sealer = sealer
    this.#compiled = new Derived(() => store.aliases.version)
  }

  /** The active alias of that name, or undefined. */
  find (alias: string): Compiled | undefined {
    return this.#compiled.of(alias, () => {
      const record = this.#store.aliases.get(alias)
      if (record === undefined || record.status !== 'active') return undefined
      return { record, allow: blockList(record.ip_allowlist), seen: new Map(), secret: record.secret_sealed !== undefined ? this.#sealer.open(`alias:${alias}`, record.secret_sealed) : undefined }
    })
  }

  /** Throws the error an exchange gets for an unknown alias or an address outside its allowlist. */
  admit (alias: string, ip: string): Compiled {
    const c = this.find(alias)
    if (c === undefined) throw new ApiError('alias_not_found', `No active bidder alias ${alias}.`, { param: 'alias' })
    let ok = c.seen.get(ip)
    if (ok === undefined) {
      const family = isIP(ip)
      ok = family !== 0 && c.allow.check(ip, family === 4 ? 'ipv4' : 'ipv6')
      if (c.seen.size >= 10_000) c.seen.clear()
      c.seen.set(ip, ok)
    }
    if (!ok) throw new ApiError('ip_not_allowed', `${ip} is not in the allowlist of ${alias}.`)
    return c
  }

  /** Checks X-Exchange-Signature over the raw body when the alias requires signed requests. */
  verify (c: Compiled, header: string | undefined, raw: Buffer, nowMs: number): void {
    if (!c.record.require_signature) return
    const m = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(header?.trim() ?? '')
    if (m === null || c.secret === undefined) throw new ApiError('invalid_signature', 'Sign the request: X-Exchange-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<raw body>" with the alias secret>.')
    const t = Number(m[1])
    if (Math.abs(nowMs / 1000 - t) > SIGNATURE_TOLERANCE_S) throw new ApiError('invalid_signature', `The signature timestamp is more than ${SIGNATURE_TOLERANCE_S} s from now.`)
    const expected = Buffer.from(hmacHex(c.secret, String(t), raw), 'hex')
    if (!timingSafeEqual(expected, Buffer.from(m[2]!, 'hex'))) throw new ApiError('invalid_signature', 'The signature does not match the body.')
  }
}
