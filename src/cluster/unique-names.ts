import type { KV } from 'nats'
import type { Logger } from '../log.js'
import { createHold, newestHold, releaseHold } from './numbered-keys.js'
import { retryFor } from '../retry.js'
import type { UniqueNames } from './link.js'

/** How long a claim outlives its request: far longer than a row takes to reach every node. */
export const CLAIM_TTL_MS = 600_000

/** The claims bucket's key prefix for a name: letters, digits and `-_=.` only, as KV keys allow. */
function claimBase (name: string): string {
  return `name.${Buffer.from(name).toString('base64url')}`
}

/** A claim's value: when it was made (ms) and its owner. */
function claimValue (owner: string): Uint8Array {
  return new TextEncoder().encode(`${Date.now()} ${owner}`)
}

/** claimValue's inverse; undefined for a value it did not write. */
function parseClaim (text: string): { owner: string, at: number } | undefined {
  const space = text.indexOf(' ')
  const at = Number(text.slice(0, space))
  return space > 0 && Number.isFinite(at) ? { owner: text.slice(space + 1), at } : undefined
}

/** UniqueNames in the engine's claims bucket, run by the supervisor for its hot threads. */
export class NameClaims implements UniqueNames {
  readonly #claims: KV
  readonly #log: Logger
  readonly #ackTimeoutMs: number

  constructor (claims: KV, log: Logger, ackTimeoutMs: number) {
    this.#claims = claims
    this.#log = log
    this.#ackTimeoutMs = ackTimeoutMs
  }

  async claim (name: string, owner: string, takeOverAfterMs?: number): Promise<boolean> {
    // Waits out a claims stream that is electing its leader, as a write waits for its quorum.
    try {
      return await retryFor(() => this.#claim(claimBase(name), owner, takeOverAfterMs), this.#ackTimeoutMs, 250)
    } catch (err) {
      this.#log.warn('cluster: a name could not be claimed', { name, error: err instanceof Error ? err.message : String(err) })
      throw err
    }
  }

  async #claim (base: string, owner: string, takeOverAfterMs: number | undefined): Promise<boolean> {
    for (;;) {
      const newest = await newestHold(this.#claims, base)
      if (newest !== undefined && !newest.released) {
        const held = parseClaim(newest.value)
        // Its own claim, landed though its answer was lost.
        if (held?.owner === owner) return true
        if (held === undefined || takeOverAfterMs === undefined || Date.now() - held.at <= takeOverAfterMs) return false
        // Its request is over: give its claim back for it, and take the next.
        await releaseHold(this.#claims, base, newest.n)
      }
      if (await createHold(this.#claims, base, newest === undefined ? 0 : newest.n + 1, claimValue(owner))) return true
    }
  }

  async release (name: string, owner: string): Promise<void> {
    const base = claimBase(name)
    try {
      const newest = await newestHold(this.#claims, base)
      if (newest !== undefined && !newest.released && parseClaim(newest.value)?.owner === owner) await releaseHold(this.#claims, base, newest.n)
    } catch (err) {
      this.#log.warn('cluster: a claimed name was not given back; it lapses by itself', { error: err instanceof Error ? err.message : String(err) })
    }
  }
}
