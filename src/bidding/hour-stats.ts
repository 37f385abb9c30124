import { iso } from '../clock.js'
import type { SeatStats } from '../generated/types.js'
import type { HourStats } from './records.js'
import type { Store } from '../store/store.js'

const HOUR = 3_600_000

function empty (): HourStats {
  return { bid_responses: 0, bids: 0, accepted: 0, rejected: {}, wins: 0, spend_usd: 0, accepted_cpm_sum: 0, win_cpm_sum: 0, latency_ms_sum: 0, latency_max_ms: 0 }
}

/**
 * Changes a seat's hour of counters inside the caller's write transaction. The hour is read inside the transaction,
 * under LMDB's write lock: two hot threads counting the same seat's hour add up instead of overwriting each other.
 */
export function addToHour (store: Store, seatId: string, now: number, change: (h: HourStats) => void): void {
  const seat = seatId.toLowerCase()
  const hour = Math.floor(now / HOUR) * HOUR
  const current = store.stats.get([seat, hour]) ?? empty()
  const next: HourStats = { ...current, rejected: { ...current.rejected } }
  change(next)
  store.stats.putSync([seat, hour], next)
}

/** What the hour's counters take of one bid's outcome. */
export interface Counted {
  status: 'accepted' | 'rejected'
  reason?: string
  price?: number
  /** From the imp's issue to the bid, when the bid named an imp issued to the seat. */
  latency_ms?: number
}

/** Adds one bid response's outcomes to the seat's hour; call inside Store.write. */
export function countResponse (store: Store, seatId: string, now: number, outcomes: readonly Counted[]): void {
  addToHour(store, seatId, now, (h) => {
    h.bid_responses++
    for (const outcome of outcomes) {
      h.bids++
      if (outcome.status === 'accepted') {
        h.accepted++
        h.accepted_cpm_sum += outcome.price ?? 0
        if (outcome.latency_ms !== undefined) {
          h.latency_ms_sum += outcome.latency_ms
          h.latency_max_ms = Math.max(h.latency_max_ms, outcome.latency_ms)
        }
      } else {
        h.rejected[outcome.reason!] = (h.rejected[outcome.reason!] ?? 0) + 1
      }
    }
  })
}

const ratio = (a: number, b: number, digits = 4) => (b === 0 ? null : Math.round((a / b) * 10 ** digits) / 10 ** digits)

/** The last 24 hours of a seat's bidding, hour by hour and in total. */
export function lastDay (store: Store, seatId: string, now: number): Omit<SeatStats, 'delivery'> {
  const seat = seatId.toLowerCase()
  const last = Math.floor(now / HOUR) * HOUR
  const first = last - 23 * HOUR
  const total = empty()
  const hourly: SeatStats['hourly'] = []
  for (let hour = first; hour <= last; hour += HOUR) {
    const h = store.stats.get([seat, hour]) ?? empty()
    hourly.push({ hour: iso(hour), bids: h.bids, accepted: h.accepted, wins: h.wins })
    total.bid_responses += h.bid_responses
    total.bids += h.bids
    total.accepted += h.accepted
    total.wins += h.wins
    total.spend_usd += h.spend_usd
    total.accepted_cpm_sum += h.accepted_cpm_sum
    total.win_cpm_sum += h.win_cpm_sum
    total.latency_ms_sum += h.latency_ms_sum
    total.latency_max_ms = Math.max(total.latency_max_ms, h.latency_max_ms)
    for (const [reason, n] of Object.entries(h.rejected)) total.rejected[reason] = (total.rejected[reason] ?? 0) + n
  }
  return {
    from: iso(first),
    to: iso(now),
    bid_responses: total.bid_responses,
    bids: total.bids,
    accepted: total.accepted,
    rejected: total.bids - total.accepted,
    rejected_by_reason: total.rejected,
    wins: total.wins,
    spend_usd: Math.round(total.spend_usd * 1e6) / 1e6,
    fill_rate: ratio(total.accepted, total.bids),
    win_rate: ratio(total.wins, total.accepted),
    avg_bid_cpm: ratio(total.accepted_cpm_sum, total.accepted, 3),
    avg_win_cpm: ratio(total.win_cpm_sum, total.wins, 3),
    avg_latency_ms: ratio(total.latency_ms_sum, total.accepted, 1),
    max_latency_ms: total.accepted > 0 ? total.latency_max_ms : null,
    hourly
  }
}
