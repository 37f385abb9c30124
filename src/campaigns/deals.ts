import type { DealRecord } from '../store/records.js'
import type { Store } from '../store/store.js'

const derived = new WeakMap<Store, { at: string, bySeat: Map<string, DealRecord[]> }>()

/** Active deals a seat is invited to; derived once per change of the deals table, since every bid may ask. */
export function activeDealsFor (store: Store, seatId: string): DealRecord[] {
  const at = `${store.deals.version}:${store.rollbacks}`
  let cache = derived.get(store)
  if (cache === undefined || cache.at !== at) {
    cache = { at, bySeat: new Map() }
    derived.set(store, cache)
  }
  const seat = seatId.toLowerCase()
  let deals = cache.bySeat.get(seat)
  if (deals === undefined) {
    deals = [...store.deals.getRange()].map(({ value }) => value).filter((d) => d.status === 'active' && d.invited_seats.some((s) => s.toLowerCase() === seat))
    cache.bySeat.set(seat, deals)
  }
  return deals
}

/** The data of a deal.* event (schema DealEvent): the deal's status now and before. */
export function dealEvent (d: DealRecord, previous: DealRecord['status'] | null): Record<string, unknown> {
  return { deal_id: d.deal_id, type: d.type, status: d.status, previous_status: previous, proposed_by: d.proposed_by ?? null }
}
