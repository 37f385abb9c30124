import { iso } from '../clock.js'
import type { FunnelEvent, SeatStats } from '../generated/types.js'
import type { HourStats } from './records.js'
import type { Store } from '../store/store.js'

const HOUR = 3_600_000

function empty (): HourStats {
  return { bid_responses: 0, bids: 0, accepted: 0, rejected: {}, wins: 0, spend_usd: 0, accepted_cpm_sum: 0, win_cpm_sum: 0, latency_ms_sum: 0, latency_max_ms: 0 }
}

/**
 * Changes this node's row of a seat's hour of counters inside the caller's write transaction. The row is read inside
 * the transaction, under LMDB's write lock: two hot threads counting the same seat's hour add up instead of
 * overwriting each other. On a cluster each node writes only its own row (store.node), replicated to every node, so
 * two nodes counting one seat's hour never overwrite each other either.
 */
export function addToHour (store: Store, seatId: string, now: number, change: (h: HourStats) => void): void {
  const key: [string, number, string] = [seatId.toLowerCase(), Math.floor(now / HOUR) * HOUR, store.node]
  const current = store.stats.get(key) ?? empty()
  const next: HourStats = { ...current, rejected: { ...current.rejected } }
  change(next)
  store.stats.putSync(key, next)
}

/** Counters added up: a seat's rows of an hour, one a node, or its hours of a day. */
function summed (rows: Iterable<HourStats>): HourStats {
  const sum = empty()
  for (const h of rows) {
    sum.bid_responses += h.bid_responses
    sum.bids += h.bids
    sum.accepted += h.accepted
    sum.wins += h.wins
    sum.spend_usd += h.spend_usd
    sum.accepted_cpm_sum += h.accepted_cpm_sum
    sum.win_cpm_sum += h.win_cpm_sum
    sum.latency_ms_sum += h.latency_ms_sum
    sum.latency_max_ms = Math.max(sum.latency_max_ms, h.latency_max_ms)
    for (const [reason, n] of Object.entries(h.rejected)) sum.rejected[reason] = (sum.rejected[reason] ?? 0) + n
  }
  return sum
}

/** A seat's hour over every node's row (and a row an earlier version wrote, keyed without a node). */
function hourOf (store: Store, seat: string, hour: number): HourStats {
  return summed(store.stats.getRange({ start: [seat, hour], end: [seat, hour, '\uffff'] }).map(({ value }) => value))
}

/** What the hour's counters take of one bid: its funnel event's part (src/bidding/intake.ts). */
export type Counted = Pick<NonNullable<FunnelEvent['bids']>[number], 'status' | 'reason' | 'price' | 'latency_ms'>

/**
 * Adds bid responses' outcomes to their seats' hours; call inside Store.write. Each seat's hour is read and written
 * once, however many of its responses the batch holds.
 */
export function countResponses (store: Store, responses: ReadonlyArray<{ seat_id: string, at: number, bids: readonly Counted[] }>): void {
  const hours = new Map<string, Array<readonly Counted[]>>()
  for (const r of responses) {
    const id = `${Math.floor(r.at / HOUR) * HOUR}|${r.seat_id}`
    const list = hours.get(id)
    if (list === undefined) hours.set(id, [r.bids])
    else list.push(r.bids)
  }
  for (const [id, list] of hours) {
    const bar = id.indexOf('|')
    addToHour(store, id.slice(bar + 1), Number(id.slice(0, bar)), (h) => {
      for (const bids of list) {
        h.bid_responses++
        for (const bid of bids) {
          h.bids++
          if (bid.status === 'accepted') {
            h.accepted++
            h.accepted_cpm_sum += bid.price
            if (bid.latency_ms !== undefined) {
              h.latency_ms_sum += bid.latency_ms
              h.latency_max_ms = Math.max(h.latency_max_ms, bid.latency_ms)
            }
          } else {
            h.rejected[bid.reason!] = (h.rejected[bid.reason!] ?? 0) + 1
          }
        }
      }
    })
  }
}

const ratio = (a: number, b: number, digits = 4) => (b === 0 ? null : Math.round((a / b) * 10 ** digits) / 10 ** digits)

/** The last 24 hours of a seat's bidding, hour by hour and in total. */
export function lastDay (store: Store, seatId: string, now: number): Omit<SeatStats, 'delivery'> {
  const seat = seatId.toLowerCase()
  const last = Math.floor(now / HOUR) * HOUR
  const first = last - 23 * HOUR
  const hours: HourStats[] = []
  const hourly: SeatStats['hourly'] = []
  for (let hour = first; hour <= last; hour += HOUR) {
    const h = hourOf(store, seat, hour)
    hours.push(h)
    hourly.push({ hour: iso(hour), bids: h.bids, accepted: h.accepted, wins: h.wins })
  }
  const total = summed(hours)
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
