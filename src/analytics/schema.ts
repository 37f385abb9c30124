/**
 * The ClickHouse schema: raw event tables the shipper fills, and rollups that materialized views keep as events
 * arrive, so that reports read rollups, not raw rows. Written in SQL that ClickHouse 18.16 (Debian's server) and 26.x
 * (chDB) both accept: DateTime('UTC'), not DateTime64 (times are UTC whatever the server's zone); no LowCardinality; rollups as AggregatingMergeTree whose every
 * measure is an aggregate state (`-StateIf` fills the measures a view does not feed with empty states, since 18.16
 * wants every column from a view).
 */

/** Where the tables go: a database, and on a cluster, its name (replicated local tables behind Distributed ones). */
export interface SchemaTarget {
  database: string
  cluster?: string
}

const DIMS: Columns = [['screen_id', 'String'], ['venue_type', 'String'], ['country', 'String'], ['state', 'String'], ['city', 'String'], ['local_hour', 'UInt8'], ['daypart', 'String']]

/** A table's columns, name and type, in order. */
export type Columns = Array<[name: string, type: string]>

/**
 * Which node logged an event: event ids are unique per node only, so on a cluster an event is (node, event_id). ''
 * on a single node. Last in every raw table, where ALTER TABLE ADD COLUMN puts it on tables made before it existed.
 */
const NODE: [string, string] = ['node', 'String']

/**
 * Raw tables: one row per unit of each funnel event, keyed for the loader's idempotency check by (ts, node, event_id).
 * The order is the order of RowBuilder's TabSeparated fields (src/analytics/rows.ts).
 */
export const RAW: Record<string, Columns> = {
  bid_requests: [['event_id', 'UInt64'], ['ts', "DateTime('UTC')"], ['seat_id', 'String'], ['sandbox', 'UInt8'], ...DIMS, NODE],
  bids: [['event_id', 'UInt64'], ['ts', "DateTime('UTC')"], ['seat_id', 'String'], ['sandbox', 'UInt8'], ...DIMS, ['price', 'Float64'], ['status', 'String'], ['reason', 'String'], ['deal_id', 'String'], ['cats', 'Array(String)'], ['adomain', 'Array(String)'], ['latency_ms', 'Float64'], NODE],
  auctions: [['event_id', 'UInt64'], ['ts', "DateTime('UTC')"], ['seat_id', 'String'], ...DIMS, ['spot_id', 'String'], ['tier', 'String'], ['creative_id', 'String'], ['clearing_cpm', 'Float64'], ['multiplier', 'Float64'], ['competitors', 'UInt32'], NODE],
  plays: [['event_id', 'UInt64'], ['ts', "DateTime('UTC')"], ['stage', 'String'], ['seat_id', 'String'], ...DIMS, ['spot_id', 'String'], ['tier', 'String'], ['creative_id', 'String'], ['clearing_cpm', 'Float64'], ['multiplier', 'Float64'], ['cost_usd', 'Float64'], ['duration_ms', 'UInt32'], NODE],
  impressions: [['event_id', 'UInt64'], ['ts', "DateTime('UTC')"], ['seat_id', 'String'], ...DIMS, ['impression_id', 'String'], ['ad_id', 'String'], ['device_id', 'String'], ['duration_ms', 'UInt32'], ['completed', 'UInt8'], ['tier', 'String'], NODE],
  proofs: [['event_id', 'UInt64'], ['ts', "DateTime('UTC')"], ['proof_id', 'String'], ['screen_id', 'String'], ['impression_id', 'String'], ['ad_id', 'String'], ['device_id', 'String'], ['tier', 'String'], ['givt', 'UInt8'], NODE]
}

/** Columns as a CREATE TABLE (or a table function's structure) lists them. */
export function columnList (columns: Columns): string {
  return columns.map(([name, type]) => `${name} ${type}`).join(', ')
}

type Measure = [name: string, fn: string, type: string]

const COUNTERS: Measure[] = [
  ['requests', 'sum', 'UInt64'], ['bids', 'sum', 'UInt64'], ['accepted', 'sum', 'UInt64'], ['bid_cpm', 'sum', 'Float64'],
  ['latency', 'sum', 'Float64'], ['spots', 'sum', 'UInt64'], ['wins', 'sum', 'UInt64'], ['win_cpm', 'sum', 'Float64'], ['starts', 'sum', 'UInt64'],
  ['completes', 'sum', 'UInt64'], ['impressions', 'sum', 'Float64'], ['spend', 'sum', 'Float64']
]
const QUANTILES = 'quantiles(0.25, 0.5, 0.75)'
const LATENCY_QUANTILES = 'quantiles(0.5, 0.95, 0.99)'

interface Rollup {
  keys: Array<[string, string]>
  measures: Measure[]
  /** Per source table: the key expressions, the measures it feeds (expression and condition), and a filter. */
  views: Array<{ from: string, where?: string, keys: Record<string, string>, feeds: Record<string, [string, string]> }>
}

const HOUR = 'toStartOfHour(ts)'
const ONE = 'toUInt64(1)'

/** The measures each source feeds, shared by the seat and screen rollups. */
function funnelFeeds (): Array<{ from: string, feeds: Record<string, [string, string]> }> {
  return [
    { from: 'bid_requests', feeds: { requests: [ONE, '1'] } },
    { from: 'bids', feeds: { bids: [ONE, '1'], accepted: [ONE, "status = 'accepted'"], bid_cpm: ['price', "status = 'accepted'"], latency: ['latency_ms', "status = 'accepted'"] } },
    { from: 'auctions', feeds: { spots: [ONE, '1'], wins: [ONE, "seat_id != ''"], win_cpm: ['clearing_cpm', "seat_id != ''"] } },
    { from: 'plays', feeds: { starts: [ONE, "stage = 'render_started'"], completes: [ONE, "stage = 'play_completed'"], impressions: ['multiplier', "stage = 'play_completed'"], spend: ['cost_usd', "stage = 'play_completed'"] } }
  ]
}

/** Rollups: per seat and hour; per seat, screen and hour; the market by hour, venue, geography and daypart; demand by category. */
export const ROLLUPS: Record<string, Rollup> = {
  seat_hourly: {
    keys: [['seat_id', 'String'], ['hour', "DateTime('UTC')"], ['sandbox', 'UInt8']],
    measures: [...COUNTERS, ['latency_q', LATENCY_QUANTILES, 'Float64']],
    views: funnelFeeds().map((f) => ({ ...f, feeds: { ...f.feeds, ...(f.from === 'bids' ? { latency_q: ['latency_ms', "status = 'accepted'"] as [string, string] } : {}) }, keys: { seat_id: 'seat_id', hour: HOUR, sandbox: f.from === 'bid_requests' || f.from === 'bids' ? 'sandbox' : 'toUInt8(0)' } }))
  },
  screen_hourly: {
    keys: [['seat_id', 'String'], ['hour', "DateTime('UTC')"], ['screen_id', 'String'], ['venue_type', 'String'], ['country', 'String'], ['state', 'String'], ['city', 'String']],
    measures: COUNTERS,
    views: funnelFeeds().map((f) => ({ ...f, keys: { seat_id: 'seat_id', hour: HOUR, screen_id: 'screen_id', venue_type: 'venue_type', country: 'country', state: 'state', city: 'city' } }))
  },
  market_hourly: {
    keys: [['hour', "DateTime('UTC')"], ['venue_type', 'String'], ['country', 'String'], ['state', 'String'], ['daypart', 'String']],
    measures: [...COUNTERS, ['bid_q', QUANTILES, 'Float64'], ['bid_avg', 'avg', 'Float64'], ['win_q', QUANTILES, 'Float64'], ['win_avg', 'avg', 'Float64'], ['seats', 'uniq', 'String']],
    views: funnelFeeds().map((f) => ({
      from: f.from,
      ...(f.from === 'bid_requests' || f.from === 'bids' ? { where: 'sandbox = 0' } : {}),
      keys: { hour: HOUR, venue_type: 'venue_type', country: 'country', state: 'state', daypart: 'daypart' },
      feeds: {
        ...f.feeds,
        ...(f.from === 'bids' ? { bid_q: ['price', "status = 'accepted'"] as [string, string], bid_avg: ['price', "status = 'accepted'"] as [string, string], seats: ['seat_id', "status = 'accepted'"] as [string, string] } : {}),
        ...(f.from === 'auctions' ? { win_q: ['clearing_cpm', 'clearing_cpm > 0'] as [string, string], win_avg: ['clearing_cpm', 'clearing_cpm > 0'] as [string, string] } : {})
      }
    }))
  },
  category_daily: {
    keys: [['day', 'Date'], ['category', 'String'], ['venue_type', 'String'], ['country', 'String'], ['daypart', 'String']],
    measures: [['bids', 'sum', 'UInt64'], ['accepted', 'sum', 'UInt64'], ['bid_cpm', 'sum', 'Float64'], ['seats', 'uniq', 'String']],
    views: [{ from: 'bids', where: 'sandbox = 0', keys: { day: 'toDate(ts)', category: 'arrayJoin(cats)', venue_type: 'venue_type', country: 'country', daypart: 'daypart' }, feeds: { bids: [ONE, '1'], accepted: [ONE, "status = 'accepted'"], bid_cpm: ['price', "status = 'accepted'"], seats: ['seat_id', '1'] } }]
  }
}

function zero (type: string): string {
  return type === 'UInt64' ? 'toUInt64(0)' : type === 'String' ? "''" : 'toFloat64(0)'
}

/** The table a query or insert names: the Distributed one on a cluster, the table itself otherwise. */
export function tableName (t: SchemaTarget, table: string): string {
  return `${t.database}.${table}`
}

function clusterClause (t: SchemaTarget): string {
  return t.cluster !== undefined ? ` ON CLUSTER ${t.cluster}` : ''
}

/** Every DDL statement, in order; each is idempotent (IF NOT EXISTS). */
export function ddl (t: SchemaTarget): string[] {
  const on = clusterClause(t)
  const local = (name: string) => t.cluster !== undefined ? `${t.database}.${name}_local` : `${t.database}.${name}`
  const engine = (kind: 'MergeTree' | 'AggregatingMergeTree', name: string) => t.cluster !== undefined
    ? `Replicated${kind}('/clickhouse/tables/{shard}/${t.database}/${name}', '{replica}')`
    : `${kind}()`
  const distributed = (name: string) => t.cluster !== undefined
    ? [`CREATE TABLE IF NOT EXISTS ${t.database}.${name}${on} AS ${local(name)} ENGINE = Distributed(${t.cluster}, ${t.database}, ${name}_local, rand())`]
    : []
  const out = [`CREATE DATABASE IF NOT EXISTS ${t.database}${on}`]
  for (const [name, columns] of Object.entries(RAW)) {
    out.push(`CREATE TABLE IF NOT EXISTS ${local(name)}${on} (${columnList(columns)}) ENGINE = ${engine('MergeTree', name)} PARTITION BY toYYYYMM(ts) ORDER BY (ts, event_id)`, ...distributed(name))
  }
  for (const [name, r] of Object.entries(ROLLUPS)) {
    const time = r.keys.find(([k]) => k === 'hour' || k === 'day')![0]
    const columns = [...r.keys.map(([k, type]) => `${k} ${type}`), ...r.measures.map(([m, fn, type]) => `${m} AggregateFunction(${fn}, ${type})`)].join(', ')
    out.push(`CREATE TABLE IF NOT EXISTS ${local(name)}${on} (${columns}) ENGINE = ${engine('AggregatingMergeTree', name)} PARTITION BY toYYYYMM(${time}) ORDER BY (${r.keys.map(([k]) => k).join(', ')})`, ...distributed(name))
    for (const v of r.views) {
      const keys = r.keys.map(([k]) => `${v.keys[k]} AS ${k}`)
      const measures = r.measures.map(([m, fn, type]) => {
        const feed = v.feeds[m]
        const [name, params = ''] = fn.split(/(?=\()/)
        return feed !== undefined ? `${name}StateIf${params}(${feed[0]}, ${feed[1]}) AS ${m}` : `${name}StateIf${params}(${zero(type)}, 0) AS ${m}`
      })
      out.push(`CREATE MATERIALIZED VIEW IF NOT EXISTS ${local(`${name}_from_${v.from}`)}${on} TO ${local(name)} AS SELECT ${[...keys, ...measures].join(', ')} FROM ${local(v.from)}${v.where !== undefined ? ` WHERE ${v.where}` : ''} GROUP BY ${r.keys.map(([k]) => k).join(', ')}`)
    }
  }
  return out
}

/**
 * The ALTERs that bring raw tables made by an earlier version up to RAW: the node column, which they lack. `has`
 * answers the columns a table of the database has (system.columns), so that each runs once.
 */
export async function upgrades (t: SchemaTarget, has: (table: string) => Promise<Set<string>>): Promise<string[]> {
  const out: string[] = []
  const [name, type] = NODE
  for (const table of Object.keys(RAW)) {
    for (const stored of t.cluster !== undefined ? [`${table}_local`, table] : [table]) {
      if (!(await has(stored)).has(name)) out.push(`ALTER TABLE ${t.database}.${stored}${clusterClause(t)} ADD COLUMN ${name} ${type}`)
    }
  }
  return out
}
