import type { DealRecord } from '../store/records.js'
import type { Store } from '../store/store.js'

/** Active deals a seat is invited to. */
export function activeDealsFor (store: Store, seatId: string): DealRecord[] {
  const seat = seatId.toLowerCase()
  return [...store.deals.getRange()].map(({ value }) => value).filter((d) => d.status === 'active' && d.invited_seats.some((s) => s.toLowerCase() === seat))
}
