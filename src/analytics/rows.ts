import type { FunnelEvent } from '../generated/types.js'
import { localTime } from '../inventory/local-time.js'
import type { ScreenRecord } from '../inventory/records.js'

/** The screen-local daypart of an hour: morning 06-12, afternoon 12-17, evening 17-22, late_night 22-06. */
export function daypartOf (hour: number): 'morning' | 'afternoon' | 'evening' | 'late_night' {
  if (hour >= 6 && hour < 12) return 'morning'
  if (hour >= 12 && hour < 17) return 'afternoon'
  if (hour >= 17 && hour < 22) return 'evening'
  return 'late_night'
}

const HOUR = 3_600_000

const ESCAPED: Record<string, string> = { '\\': '\\\\', '\t': '\\t', '\n': '\\n', '\r': '\\r', "'": "\\'" }
const FIELD = /[\\\t\n\r]/
const FIELD_ALL = /[\\\t\n\r]/g
const ELEMENT = /[\\'\t\n\r]/
const ELEMENT_ALL = /[\\'\t\n\r]/g
const escapeOne = (c: string): string => ESCAPED[c]!

/** A string as a TabSeparated field: backslash, tab and line breaks escaped. */
export function tsv (s: string): string {
  return FIELD.test(s) ? s.replace(FIELD_ALL, escapeOne) : s
}

/**
 * An Array(String) as a TabSeparated field: ['a','b']. ClickHouse reads the array straight from the line, each element
 * a quoted string with its own escapes, so an element is escaped once: backslash and quote, and what would end the line.
 */
export function tsvArray (items: readonly string[] | undefined): string {
  if (items === undefined || items.length === 0) return '[]'
  let out = '['
  for (let i = 0; i < items.length; i++) {
    const s = items[i]!
    out += `${i === 0 ? '' : ','}'${ELEMENT.test(s) ? s.replace(ELEMENT_ALL, escapeOne) : s}'`
  }
  return out + ']'
}

/**
 * One table's rows of a batch as TabSeparated bytes, each line with the event id it came from. Lines go straight into
 * a buffer: a batch of tens of thousands of row strings kept until the insert made the garbage collector copy each
 * one twice, which cost more than building them.
 */
export class TableRows {
  #bytes = Buffer.allocUnsafe(1 << 20)
  #length = 0
  readonly ids: number[] = []
  /** Where each line ends (after its newline). */
  readonly #ends: number[] = []

  add (id: number, line: string): void {
    const need = this.#length + Buffer.byteLength(line) + 1
    if (need > this.#bytes.length) {
      const grown = Buffer.allocUnsafe(Math.max(need, this.#bytes.length * 2))
      this.#bytes.copy(grown, 0, 0, this.#length)
      this.#bytes = grown
    }
    this.#length += this.#bytes.write(line, this.#length, 'utf8')
    this.#bytes[this.#length++] = 10
    this.ids.push(id)
    this.#ends.push(this.#length)
  }

  /** The TabSeparated text of every line whose event id keep accepts. */
  text (keep: (id: number) => boolean = () => true): Buffer {
    const all = this.#bytes.subarray(0, this.#length)
    if (this.ids.every(keep)) return all
    const parts: Buffer[] = []
    for (let i = 0; i < this.ids.length; i++) if (keep(this.ids[i]!)) parts.push(all.subarray(i === 0 ? 0 : this.#ends[i - 1], this.#ends[i]))
    return Buffer.concat(parts)
  }
}

/** A screen's dimensions as a row carries them, up to its local hour: screen, venue type, country, state, city. */
interface Place {
  fields: string
  timezone: string
}

const NOWHERE = (screenId: string): Place => ({ fields: `${tsv(screenId)}\t\t\t\t`, timezone: '' })

/**
 * Turns funnel events into rows of the raw ClickHouse tables, as TabSeparated lines in the column order of schema.ts's
 * RAW (the shipper names those columns in its insert). Each row carries its screen's venue and geography and the
 * screen-local hour and daypart, so rollups by venue, geography and daypart need no join. A batch reads each screen
 * once (`screen`, the caller's view of LMDB) and works out each zone's local hour once per UTC hour; the text is built
 * directly, not through an object per row and JSON, which cost the analytics process more than ClickHouse's insert did.
 */
export class RowBuilder {
  readonly #screen: (id: string) => ScreenRecord | undefined
  readonly #hours = new Map<string, string>()
  readonly #places = new Map<string, Place>()
  readonly #tables = new Map<string, TableRows>()

  constructor (screen: (id: string) => ScreenRecord | undefined) {
    this.#screen = screen
  }

  /** The local hour and daypart fields of an instant in a zone. */
  #localHour (timezone: string, at: number): string {
    const bucket = Math.floor(at / HOUR)
    const id = `${timezone}|${bucket}`
    let fields = this.#hours.get(id)
    if (fields === undefined) {
      // Zones with a half-hour offset still count whole local hours: the hour the bucket starts in.
      const hour = Math.floor(localTime(timezone, bucket * HOUR).minute / 60)
      fields = `${hour}\t${daypartOf(hour)}`
      if (this.#hours.size > 100_000) this.#hours.clear()
      this.#hours.set(id, fields)
    }
    return fields
  }

  /** screen_id, venue_type, country, state, city, local_hour, daypart. */
  #dims (screenId: string, at: number): string {
    let place = this.#places.get(screenId)
    if (place === undefined) {
      const s = screenId !== '' ? this.#screen(screenId) : undefined
      place = s === undefined
        ? NOWHERE(screenId)
        : { fields: `${tsv(screenId)}\t${tsv(s.location.venue_type)}\t${tsv(s.location.country)}\t${tsv(s.location.state)}\t${tsv(s.location.city)}`, timezone: s.timezone }
      this.#places.set(screenId, place)
    }
    return place.timezone === '' ? `${place.fields}\t0\t` : `${place.fields}\t${this.#localHour(place.timezone, at)}`
  }

  #push (table: string, id: number, line: string): void {
    let rows = this.#tables.get(table)
    if (rows === undefined) {
      rows = new TableRows()
      this.#tables.set(table, rows)
    }
    rows.add(id, line)
  }

  /** Adds one event's rows. */
  add (id: number, e: FunnelEvent): void {
    const head = `${id}\t${Math.floor(e.at / 1000)}`
    const seat = tsv(e.seat_id ?? '')
    const sandbox = e.sandbox === true ? 1 : 0
    if (e.stage === 'request') {
      for (const screen of e.screens) this.#push('bid_requests', id, `${head}\t${seat}\t${sandbox}\t${this.#dims(screen, e.at)}`)
    } else if (e.stage === 'bid_received') {
      for (const b of e.bids ?? []) {
        this.#push('bids', id, `${head}\t${seat}\t${sandbox}\t${this.#dims(b.screen_id, e.at)}\t${b.price}\t${b.status}\t${tsv(b.reason ?? '')}\t${tsv(b.deal_id ?? '')}\t${tsvArray(b.cat)}\t${tsvArray(b.adomain)}\t${b.latency_ms ?? 0}`)
      }
    } else if (e.stage === 'auction') {
      this.#push('auctions', id, `${head}\t${seat}\t${this.#dims(e.screens[0] ?? '', e.at)}\t${tsv(e.spot_id ?? '')}\t${tsv(e.tier ?? '')}\t${tsv(e.creative_id ?? '')}\t${e.clearing_cpm ?? 0}\t${e.multiplier ?? 0}\t${e.competitors ?? 0}`)
    } else if (e.stage === 'proof') {
      const screen = e.screens[0] ?? ''
      const impression = tsv(e.impression_id ?? '')
      const ad = tsv(e.ad_id ?? '')
      const device = tsv(e.device_id ?? '')
      this.#push('proofs', id, `${head}\t${tsv(e.proof_id ?? '')}\t${tsv(screen)}\t${impression}\t${ad}\t${device}\t${tsv(e.tier ?? '')}\t${e.givt_passed === true ? 1 : 0}`)
      if (e.tier === 'impression_callback') {
        this.#push('impressions', id, `${head}\t${seat}\t${this.#dims(screen, e.at)}\t${impression}\t${ad}\t${device}\t${e.duration_ms ?? 0}\t${e.completed === true ? 1 : 0}\t${tsv(e.tier)}`)
      }
    } else {
      this.#push('plays', id, `${head}\t${e.stage}\t${seat}\t${this.#dims(e.screens[0] ?? '', e.at)}\t${tsv(e.spot_id ?? '')}\t${tsv(e.tier ?? '')}\t${tsv(e.creative_id ?? '')}\t${e.clearing_cpm ?? 0}\t${e.multiplier ?? 0}\t${e.cost_usd ?? 0}\t${e.duration_ms ?? 0}`)
    }
  }

  /** The rows gathered, per table, and a fresh start (screens are read again). */
  take (): Map<string, TableRows> {
    const out = new Map(this.#tables)
    this.#tables.clear()
    this.#places.clear()
    return out
  }
}
