import type { Store } from '../store/store.js'
import type { ReservationRecord } from './records.js'

// The holds index (`holds`: held reservations by when they lapse, which the catalog's job walks): derived on each node
// from its reservations, as the seat lists are, not replicated itself. Replicated, it was a second row through the
// engine on every hold, applied by every node, for what each node can derive from the first.

/** Keeps the index in step with a reservation's change from previous to next (either undefined: none). */
export function indexHold (store: Store, previous: ReservationRecord | undefined, next: ReservationRecord | undefined): void {
  if (previous?.status === 'held') store.holds.removeSync([previous.expires_ms, previous.reservation_id])
  if (next?.status === 'held') store.holds.putSync([next.expires_ms, next.reservation_id], next.reservation_id)
}

/** Writes a reservation, and the index with it. Call inside Store.write. */
export function putReservation (store: Store, next: ReservationRecord): void {
  const previous = store.reservations.get(next.reservation_id)
  store.reservations.putSync(next.reservation_id, next)
  indexHold(store, previous, next)
}

/**
 * A cluster node: keeps the index in step with a reservation another node wrote, after the applier wrote it, with
 * the value it replaced. Call inside Store.write.
 */
export function holdApplied (store: Store, table: string, key: string, previous: unknown): void {
  if (table === 'reservations') indexHold(store, previous as ReservationRecord | undefined, store.reservations.get(key))
}
