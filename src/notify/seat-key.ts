import type { KeySealer } from '../auth/sealed-keys.js'
import type { KeyRecord } from '../auth/records.js'
import type { Store } from '../store/store.js'
import { seatKeyIds } from '../auth/keys.js'

/** A seat's API key, unsealed for the moment of signing, with its record (its prefix names it to the receiver). */
export interface SeatKey {
  record: KeyRecord
  key: string
}

/**
 * The API key that signs a seat's notifications (spec, Authentication 6): the given key (the one that bid) while it is
 * live, else the seat's newest live key; undefined when the seat has none that can sign.
 */
export function seatSigningKey (store: Store, sealer: KeySealer, seatId: string | undefined, keyId: string | undefined, now: number): SeatKey | undefined {
  const live = (k: KeyRecord | undefined): k is KeyRecord & { sealed: string } =>
    k !== undefined && k.sealed !== undefined && k.revoked_at === null && (k.expires_at === undefined || Date.parse(k.expires_at) > now)
  let record = keyId !== undefined ? store.keys.get(keyId) : undefined
  if (!live(record) && seatId !== undefined) {
    record = seatKeyIds(store, seatId).reverse().map((id) => store.keys.get(id)).find(live)
  }
  if (!live(record)) return undefined
  const key = sealer.open(record.key_id, record.sealed)
  return key === undefined ? undefined : { record, key }
}
