import type { SeatRecord } from './records.js'
import type { Store } from '../store/store.js'

/** Stores a seat under its lower-cased id: seat ids match whatever their case. Call inside Store.write. */
export function saveSeat (store: Store, seat: SeatRecord): void {
  store.seats.putSync(seat.seat_id.toLowerCase(), seat)
}

/**
 * The record a cluster node locks (RouteDef.exclusive) to read and rewrite a seat: the operator's actions and rate
 * limits, and a key's revocation, which must leave the seat a live key.
 */
export function seatRecord (seatId: string): string {
  return `seat:${seatId.toLowerCase()}`
}
