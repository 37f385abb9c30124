import { createHmac, createSecretKey, type KeyObject } from 'node:crypto'
import { sameText } from '../../auth/same-text.js'
import { secret } from '../../store/secrets.js'
import type { Store } from '../../store/store.js'

/**
 * An issued id's tag: the HMAC of everything else in the id, so as unique as the id itself, in 16 characters where the
 * id takes over 100. A string without a tag (no dot) is its own.
 */
export function impTag (id: string): string {
  return id.slice(id.lastIndexOf('.') + 1)
}

/** What an issued imp id carries. */
export interface IssuedImp {
  screenId: string
  seatId: string
  /** Floor at issue time, USD CPM. */
  floor: number
  /** Impression multiplier at issue time (imp.qty.multiplier). */
  multiplier: number
  issuedAt: number
  expiresAt: number
}

/** 12 bytes of tag: 16 base64url characters, a whole number of base64 groups, so the digest's prefix is the tag. */
const TAG_CHARS = 16


/**
 * Issued imp ids remember their own spot: each id is the spot's facts plus an HMAC-SHA256 tag under a secret kept in
 * the LMDB environment. A bid names its imp id, and the id alone proves that this seat was offered this screen at
 * this floor until this time. Nothing is written when bid requests are issued (a 200-screen page would otherwise cost
 * 200 writes), every node holding the same environment verifies the same ids, and a restart forgets nothing.
 */
export class ImpIds {
  /** A key object, imported once: an HMAC keyed with the raw bytes imports them again on every bid (0.6 us). */
  readonly #secret: KeyObject
  /**
   * Makes ids of the same spot issued in the same millisecond distinct, with the issuing hot thread's number (each
   * thread counts on its own); the tag, not this, makes them unforgeable.
   */
  #sequence = 0
  readonly #thread: string

  constructor (store: Store, thread = 0) {
    this.#secret = createSecretKey(secret(store, 'imp_ids'))
    this.#thread = thread.toString(36)
  }

  #tag (payload: string): string {
    return createHmac('sha256', this.#secret).update(payload).digest('base64url').slice(0, TAG_CHARS)
  }

  /** A new imp id for a spot. */
  issue (imp: IssuedImp): string {
    this.#sequence = (this.#sequence + 1) % 0x7fffffff
    const payload = [imp.screenId, imp.seatId, imp.floor, imp.multiplier, imp.issuedAt.toString(36), imp.expiresAt.toString(36), `${this.#sequence.toString(36)}.${this.#thread}`].join('~')
    const encoded = Buffer.from(payload).toString('base64url')
    return `${encoded}.${this.#tag(encoded)}`
  }

  /** The spot an id was issued for, or undefined when the id is malformed, forged or expired. */
  verify (id: string, now: number): IssuedImp | undefined {
    const imp = this.read(id)
    return imp !== undefined && imp.expiresAt > now ? imp : undefined
  }

  /** The spot an id was issued for, expired or not; undefined when the id is malformed or forged. */
  read (id: string): IssuedImp | undefined {
    const dot = id.lastIndexOf('.')
    if (dot <= 0) return undefined
    const encoded = id.slice(0, dot)
    if (!sameText(id.slice(dot + 1), this.#tag(encoded))) return undefined
    const [screenId, seatId, floor, multiplier, issued, expires] = Buffer.from(encoded, 'base64url').toString().split('~')
    return { screenId: screenId!, seatId: seatId!, floor: Number(floor), multiplier: Number(multiplier), issuedAt: parseInt(issued!, 36), expiresAt: parseInt(expires!, 36) }
  }
}
