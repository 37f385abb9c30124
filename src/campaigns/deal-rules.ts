import type { IndexKey, IndexTuple } from '../inventory/records.js'
import type { DealRecord } from './records.js'
import { matchesEntry } from './targeting.js'

// When a deal runs and what it costs: one place for bid intake, the waterfall, the exchange bidder, the adslots feed
// and the deals' own expiry.

/** Whether a deal runs on a screen on its date (screenDate): active, its dates covering the day, the screen within its targeting. */
export function dealRuns (deal: DealRecord, date: string, entry: { key: IndexKey, tuple: IndexTuple } | undefined): boolean {
  if (deal.status !== 'active' || entry === undefined) return false
  return deal.start_date <= date && date <= deal.end_date && matchesEntry(deal.targeting, entry.key, entry.tuple)
}

/** The westernmost local calendar (UTC-12): a date is over everywhere once it is over there. */
const LAST_TIMEZONE_MS = 12 * 3_600_000

/** Whether a deal's last day is over on every screen's calendar, so that it can expire (dealRuns goes by local days). */
export function dealOverEverywhere (deal: Pick<DealRecord, 'end_date'>, now: number): boolean {
  return new Date(now - LAST_TIMEZONE_MS).toISOString().slice(0, 10) > deal.end_date
}

/** The deal's price a bid on it must meet: its fixed price, else its floor. */
export function dealPrice (deal: DealRecord): number {
  return deal.fixed_cpm ?? deal.floor_cpm
}
