import type { FunnelEvent } from '../generated/types.js'
import { localTime } from '../inventory/local-time.js'
import type { ScreenRecord } from '../inventory/records.js'

/** A screen's dimensions as rows carry them. */
interface Dims {
  screen_id: string
  venue_type: string
  country: string
  state: string
  city: string
  local_hour: number
  daypart: string
}

/** The screen-local daypart of an hour: morning 06-12, afternoon 12-17, evening 17-22, late_night 22-06. */
export function daypartOf (hour: number): 'morning' | 'afternoon' | 'evening' | 'late_night' {
  if (hour >= 6 && hour < 12) return 'morning'
  if (hour >= 12 && hour < 17) return 'afternoon'
  if (hour >= 17 && hour < 22) return 'evening'
  return 'late_night'
}

const HOUR = 3_600_000

/**
 * Turns funnel events into rows of the raw ClickHouse tables (JSONEachRow text per table), each row carrying its
 * screen's venue and geography and the screen-local hour and daypart, so rollups by venue, geography and daypart
 * need no join. Screens are read through `screen` (the caller's view of LMDB); local hours are worked out once per
 * zone and UTC hour.
 */
export class RowBuilder {
  readonly #screen: (id: string) => ScreenRecord | undefined
  readonly #hours = new Map<string, number>()
  readonly #tables = new Map<string, Array<[number, string]>>()

  constructor (screen: (id: string) => ScreenRecord | undefined) {
    this.#screen = screen
  }

  #localHour (timezone: string, at: number): number {
    const bucket = Math.floor(at / HOUR)
    const id = `${timezone}|${bucket}`
    let hour = this.#hours.get(id)
    if (hour === undefined) {
      // Zones with a half-hour offset still count whole local hours: the hour the bucket starts in.
      hour = Math.floor(localTime(timezone, bucket * HOUR).minute / 60)
      if (this.#hours.size > 100_000) this.#hours.clear()
      this.#hours.set(id, hour)
    }
    return hour
  }

  #dims (screenId: string, at: number): Dims {
    const s = screenId !== '' ? this.#screen(screenId) : undefined
    if (s === undefined) return { screen_id: screenId, venue_type: '', country: '', state: '', city: '', local_hour: 0, daypart: '' }
    const hour = this.#localHour(s.timezone, at)
    return { screen_id: screenId, venue_type: s.location.venue_type, country: s.location.country, state: s.location.state, city: s.location.city, local_hour: hour, daypart: daypartOf(hour) }
  }

  #push (table: string, row: Record<string, unknown> & { event_id: number }): void {
    let lines = this.#tables.get(table)
    if (lines === undefined) {
      lines = []
      this.#tables.set(table, lines)
    }
    lines.push([row.event_id, JSON.stringify(row)])
  }

  /** Adds one event's rows. */
  add (id: number, e: FunnelEvent): void {
    const ts = Math.floor(e.at / 1000)
    const seat = e.seat_id ?? ''
    const sandbox = e.sandbox === true ? 1 : 0
    if (e.stage === 'request') {
      for (const screen of e.screens) this.#push('bid_requests', { event_id: id, ts, seat_id: seat, sandbox, ...this.#dims(screen, e.at) })
    } else if (e.stage === 'bid_received') {
      for (const b of e.bids ?? []) {
        this.#push('bids', { event_id: id, ts, seat_id: seat, sandbox, ...this.#dims(b.screen_id, e.at), price: b.price, status: b.status, reason: b.reason ?? '', deal_id: b.deal_id ?? '', cats: b.cat ?? [], adomain: b.adomain ?? [], latency_ms: b.latency_ms ?? 0 })
      }
    } else if (e.stage === 'auction') {
      this.#push('auctions', { event_id: id, ts, seat_id: seat, ...this.#dims(e.screens[0] ?? '', e.at), spot_id: e.spot_id ?? '', tier: e.tier ?? '', creative_id: e.creative_id ?? '', clearing_cpm: e.clearing_cpm ?? 0, multiplier: e.multiplier ?? 0, competitors: e.competitors ?? 0 })
    } else if (e.stage === 'proof') {
      const screen = e.screens[0] ?? ''
      this.#push('proofs', { event_id: id, ts, proof_id: e.proof_id ?? '', screen_id: screen, impression_id: e.impression_id ?? '', ad_id: e.ad_id ?? '', device_id: e.device_id ?? '', tier: e.tier ?? '', givt: e.givt_passed === true ? 1 : 0 })
      if (e.tier === 'impression_callback') {
        this.#push('impressions', { event_id: id, ts, seat_id: seat, ...this.#dims(screen, e.at), impression_id: e.impression_id ?? '', ad_id: e.ad_id ?? '', device_id: e.device_id ?? '', duration_ms: e.duration_ms ?? 0, completed: e.completed === true ? 1 : 0, tier: e.tier })
      }
    } else {
      this.#push('plays', { event_id: id, ts, stage: e.stage, seat_id: seat, ...this.#dims(e.screens[0] ?? '', e.at), spot_id: e.spot_id ?? '', tier: e.tier ?? '', creative_id: e.creative_id ?? '', clearing_cpm: e.clearing_cpm ?? 0, multiplier: e.multiplier ?? 0, cost_usd: e.cost_usd ?? 0, duration_ms: e.duration_ms ?? 0 })
    }
  }

  /** The rows gathered, per table, each with its event id, and a fresh start. */
  take (): Map<string, Array<[number, string]>> {
    const out = new Map(this.#tables)
    this.#tables.clear()
    return out
  }
}
