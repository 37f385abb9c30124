import type { SeatRecord } from './records.js'
import type { Store } from '../store/store.js'

/** Stores a seat under its lower-cased id: seat ids match whatever their case. Call inside Store.write. */
export function saveSeat (store: Store, seat: SeatRecord): void {
  store.seats.putSync(seat.seat_id.toLowerCase(), seat)
}
