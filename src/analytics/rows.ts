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
 * One table's rows of a batch as TabSeparated bytes, each line with the event it came from: its id and the index of its
 * node in the batch's nodes. Lines go straight into
 * a buffer: a batch of tens of thousands of row strings kept until the insert made the garbage collector copy each
 * one twice, which cost more than building them. The buffer can be the last batch's (see RowBuilder.take).
 */
export class TableRows {
  #bytes: Buffer
  #length = 0
  readonly ids: number[] = []
  readonly origins: number[] = []
  /** Where each line ends (after its newline). */
  readonly #ends: number[] = []

  constructor (bytes: Buffer = Buffer.allocUnsafe(1 << 20)) {
    this.#bytes = bytes
  }

  /** The memory the lines are in, for a later batch once this one is shipped. */
  get buffer (): Buffer {
    return this.#bytes
  }

  /** A line, then its last field, the node (written here so that no line is copied to append it). */
  add (id: number, line: string, origin: number, node: string): void {
    // A UTF-16 unit is at most 3 bytes of UTF-8: room for that is room enough, without measuring the line first.
    const need = this.#length + (line.length + node.length) * 3 + 2
    if (need > this.#bytes.length) {
      const grown = Buffer.allocUnsafe(Math.max(need, this.#bytes.length * 2))
      this.#bytes.copy(grown, 0, 0, this.#length)
      this.#bytes = grown
    }
    this.#length += this.#bytes.write(line, this.#length, 'utf8')
    this.#bytes[this.#length++] = 9
    this.#length += this.#bytes.write(node, this.#length, 'utf8')
    this.#bytes[this.#length++] = 10
    this.ids.push(id)
    this.origins.push(origin)
    this.#ends.push(this.#length)
  }

  /** The TabSeparated text of every line whose event keep accepts. */
  text (keep: (id: number, origin: number) => boolean = () => true): Buffer {
    const all = this.#bytes.subarray(0, this.#length)
    const kept = (i: number): boolean => keep(this.ids[i]!, this.origins[i]!)
    let every = true
    for (let i = 0; i < this.ids.length && every; i++) every = kept(i)
    if (every) return all
    const parts: Buffer[] = []
    for (let i = 0; i < this.ids.length; i++) if (kept(i)) parts.push(all.subarray(i === 0 ? 0 : this.#ends[i - 1], this.#ends[i]))
    return Buffer.concat(parts)
  }
}

/** A batch's rows per table; a row's origin is the index of its node in nodes. */
export interface RowBatch {
  tables: Map<string, TableRows>
  nodes: string[]
}

/**
 * A screen's dimensions as a row carries them: screen, venue type, country, state, city; and with the local hour and
 * daypart of the last UTC hour asked, since a batch's events are mostly of one hour.
 */
interface Place {
  fields: string
  timezone: string
  hour: number
  dims: string
}

/**
 * Turns funnel events into rows of the raw ClickHouse tables, as TabSeparated lines in the column order of schema.ts's
 * RAW (the shipper names those columns in its insert). Each row carries its screen's venue and geography and the
 * screen-local hour and daypart, so rollups by venue, geography and daypart need no join. A batch reads each screen
 * once (`screen`, the caller's view of LMDB) and works out a screen's local hour once per UTC hour; the text is built
 * directly, not through an object per row and JSON, which cost the analytics process more than ClickHouse's insert did.
 */
export class RowBuilder {
  readonly #screen: (id: string) => ScreenRecord | undefined
  readonly #places = new Map<string, Place>()
  readonly #tables = new Map<string, TableRows>()
  /** Each table's buffer of the batch before, reused once that batch is shipped: growing a new one copied it 3 times. */
  readonly #spare = new Map<string, Buffer>()
  /** The nodes whose events the batch holds, in the order first seen, and the one events are added for now. */
  #nodes: string[] = ['']
  #origin = 0
  #node = ''

  constructor (screen: (id: string) => ScreenRecord | undefined) {
    this.#screen = screen
  }

  /** screen_id, venue_type, country, state, city, local_hour, daypart. */
  #dims (screenId: string, at: number): string {
    let place = this.#places.get(screenId)
    if (place === undefined) {
      const s = screenId !== '' ? this.#screen(screenId) : undefined
      place = s === undefined
        ? { fields: `${tsv(screenId)}\t\t\t\t`, timezone: '', hour: -1, dims: '' }
        : { fields: `${tsv(screenId)}\t${tsv(s.location.venue_type)}\t${tsv(s.location.country)}\t${tsv(s.location.state)}\t${tsv(s.location.city)}`, timezone: s.timezone, hour: -1, dims: '' }
      this.#places.set(screenId, place)
    }
    const hour = Math.floor(at / HOUR)
    if (place.hour !== hour) {
      place.hour = hour
      if (place.timezone === '') place.dims = `${place.fields}\t0\t`
      else {
        // Zones with a half-hour offset still count whole local hours: the hour the UTC hour starts in.
        const local = Math.floor(localTime(place.timezone, hour * HOUR).minute / 60)
        place.dims = `${place.fields}\t${local}\t${daypartOf(local)}`
      }
    }
    return place.dims
  }

  #push (table: string, id: number, line: string): void {
    let rows = this.#tables.get(table)
    if (rows === undefined) {
      rows = new TableRows(this.#spare.get(table))
      this.#tables.set(table, rows)
    }
    rows.add(id, line, this.#origin, this.#node)
  }

  /** The node that logged the events added next ('' on a single node). */
  from (node: string): void {
    if (node === this.#nodes[this.#origin]) return
    let origin = this.#nodes.indexOf(node)
    if (origin === -1) origin = this.#nodes.push(node) - 1
    this.#origin = origin
    this.#node = tsv(node)
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

  /**
   * The rows gathered, per table, with the nodes their origins index, and a fresh start (screens are read again; the
   * node stays). Their memory is the next batch's: ship them before adding more.
   */
  take (): RowBatch {
    const tables = new Map(this.#tables)
    for (const [table, rows] of tables) this.#spare.set(table, rows.buffer)
    this.#tables.clear()
    this.#places.clear()
    const nodes = this.#nodes
    const node = nodes[this.#origin]!
    this.#nodes = [node]
    this.#origin = 0
    return { tables, nodes }
  }
}
