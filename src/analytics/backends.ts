import { mkdirSync, writeFileSync } from 'node:fs'
import { Readable } from 'node:stream'
import { join, resolve } from 'node:path'
import type { ClickHouseClient, ClickHouseSettings } from '@clickhouse/client'
import { columnList, type Columns } from './schema.js'
import { inline, type Params } from './sql.js'

/** What the analytics process needs of ClickHouse, embedded or a server. */
export interface Backend {
  readonly name: 'chdb' | 'server'
  /** How placeholders reach ClickHouse: bound by the client, or inlined as literals for a server without query parameters. */
  readonly binding: 'bound' | 'inlined'
  /** Runs a statement (DDL). */
  exec (sql: string): Promise<void>
  /** Rows of a SELECT, numbers as numbers, its {name:Type} placeholders bound to params. */
  query (sql: string, params?: Params): Promise<Array<Record<string, unknown>>>
  /** Inserts TabSeparated rows, fields in the order of columns, into a table (database-qualified). */
  insert (table: string, columns: Columns, rows: Buffer): Promise<void>
  close (): Promise<void>
}

export interface BackendConfig {
  dataDir: string
  url?: string
  user?: string
  password?: string
  /** A cluster name: inserts through Distributed tables then return only once every shard has written them. */
  cluster?: string
}

/**
 * The setting that merges the rows of an inserted block that share a sorting key before the part is written (ClickHouse
 * 20.12 on; 18.16 never did, and refuses the name). Every rollup row comes from a view that has already grouped its
 * block by the rollup's key, so that merge finds nothing to fold. Measured in chDB alone, an insert of 100k bids over
 * 2,000 screens and 30 days spent 430 ms of its 1.2-1.4 s there; bench/analytics, whose batches fold more, could not
 * tell the difference. Parts keep being merged in the background, and reports aggregate across parts and rows alike.
 */
const UNMERGED_INSERTS = 'optimize_on_insert'

/** A string as a ClickHouse quoted literal. */
function quoted (s: string): string {
  return `'${s.replace(/[\\']/g, '\\$&')}'`
}

function parseRows (text: string): Array<Record<string, unknown>> {
  const rows: Array<Record<string, unknown>> = []
  for (const line of text.split('\n')) if (line !== '') rows.push(JSON.parse(line) as Record<string, unknown>)
  return rows
}

/**
 * Embedded chDB (a whole ClickHouse in this process), data under DATA_DIR/clickhouse. Its calls are synchronous; the
 * analytics process is its own, so they block nothing but the shipper and queries queued behind them.
 */
async function chdb (dataDir: string): Promise<Backend> {
  const { Session } = await import('chdb')
  const dir = join(dataDir, 'clickhouse')
  mkdirSync(dir, { recursive: true })
  // ClickHouse's memory worker corrects its memory tracker every 100 ms by default: 3.5 ms of CPU a second with
  // nothing to do, the largest part of an idle analytics process (measured by thread). Every 5 s is ample for a
  // process whose queries are ours.
  const session = new Session(dir, { connectionArgs: ['--memory_worker_period_ms=5000'] })
  session.query('SET output_format_json_quote_64bit_integers = 0')
  session.query(`SET ${UNMERGED_INSERTS} = 0`)
  // Rows reach chDB through a file: data inlined in the query text costs chDB twice as much to read (bench/analytics).
  const spool = resolve(dir, 'insert.tsv')
  return {
    name: 'chdb',
    binding: 'bound',
    async exec (sql) { session.query(sql) },
    async query (sql, params = {}) { return parseRows(session.queryBind(sql, params, 'JSONEachRow')) },
    async insert (table, columns, rows) {
      writeFileSync(spool, rows)
      session.query(`INSERT INTO ${table} (${columns.map(([name]) => name).join(', ')}) SELECT * FROM file(${quoted(spool)}, 'TabSeparated', ${quoted(columnList(columns))})`)
    },
    async close () { session.close() }
  }
}

/** A ClickHouse server or cluster over HTTP, through the official client. */
async function server (config: BackendConfig): Promise<Backend> {
  const { createClient, ClickHouseLogLevel } = await import('@clickhouse/client')
  const client = createClient({
    // Every failure reaches our caller, which logs it once as JSON; the client's own multi-line dumps would repeat it.
    log: { level: ClickHouseLogLevel.OFF },
    url: config.url!,
    ...(config.user !== undefined ? { username: config.user } : {}),
    ...(config.password !== undefined ? { password: config.password } : {}),
    request_timeout: 60_000,
    // The shipper deletes events once an insert returns, so on a cluster the insert must wait for the shards.
    clickhouse_settings: { output_format_json_quote_64bit_integers: 0, ...(config.cluster !== undefined ? { insert_distributed_sync: 1 } : {}) }
  })
  const bound = await takesParameters(client)
  const insertSettings: ClickHouseSettings = await knows(client, UNMERGED_INSERTS) ? { [UNMERGED_INSERTS]: 0 as const } : {}
  return {
    name: 'server',
    binding: bound ? 'bound' : 'inlined',
    async exec (sql) { await client.command({ query: sql }) },
    async query (sql, params = {}) {
      const result = await client.query(bound ? { query: sql, query_params: params, format: 'JSONEachRow' } : { query: inline(sql, params), format: 'JSONEachRow' })
      return await result.json<Record<string, unknown>>()
    },
    // The rows go as the request's body, not after the query text: the client trims a query, and a last row's empty
    // fields went with the whitespace (18.16 then refused the row).
    async insert (table, columns, rows) { await client.insert({ table, columns: columns.map(([name]) => name) as [string, ...string[]], values: Readable.from([rows], { objectMode: false }), format: 'TabSeparated', clickhouse_settings: insertSettings }) },
    async close () { await client.close() }
  }
}

/**
 * Whether the server binds query parameters (ClickHouse 19.x on; Debian's 18.16 does not). Asked, not read from the
 * version: the answer is what matters. An old server refuses the parameter as an unknown setting; any other failure
 * (the server is down) is thrown, and the caller retries the connection.
 */
async function takesParameters (client: ClickHouseClient): Promise<boolean> {
  try {
    const rows = await (await client.query({ query: 'SELECT {probe:UInt8} AS probe', query_params: { probe: 7 }, format: 'JSONEachRow' })).json<{ probe: number }>()
    return rows[0]?.probe === 7
  } catch (err) {
    if (err instanceof Error && /param_probe/.test(err.message)) return false
    throw err
  }
}

/** Whether the server has a setting of this name: system.settings lists them on every version we support. */
async function knows (client: ClickHouseClient, setting: string): Promise<boolean> {
  const rows = await (await client.query({ query: `SELECT count() AS n FROM system.settings WHERE name = ${quoted(setting)}`, format: 'JSONEachRow' })).json<{ n: number | string }>()
  return Number(rows[0]?.n) > 0
}

/** The backend a configuration names: the server at url, else embedded chDB. */
export function openBackend (config: BackendConfig): Promise<Backend> {
  return config.url !== undefined ? server(config) : chdb(config.dataDir)
}
