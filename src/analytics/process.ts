// The analytics process: forked by the service, it owns ClickHouse (embedded chDB must run in the main thread of a
// process of its own) and the shipper that drains the LMDB funnel log into it (a cluster node with a chDB of its own:
// into the stream its loader fills that chDB from). The service talks to it over IPC: queries in, rows out. It dies
// with its parent.
import type { FunnelStream } from '../cluster/funnel-stream.js'
import { retryWithBackoff } from '../retry.js'
import { countLogged } from '../events/funnel.js'
import { createLogger } from '../log.js'
import { openWhenHeld } from '../store/open-beside.js'
import { openStore } from '../store/store.js'
import { openBackend, type Backend } from './backends.js'
import { ClickHouseSink } from './load.js'
import type { AnalyticsRequest, AnalyticsReply, ProcessConfig } from './protocol.js'
import { ddl, upgrades } from './schema.js'
import { Shipper } from './shipper.js'
import type { StreamLoader } from './stream-loader.js'

const config = JSON.parse(process.env.OOHBID_ANALYTICS_CONFIG ?? '{}') as ProcessConfig
const log = createLogger(config.logLevel)
// Opened read-only while the service holds its writers (src/store/open-beside.ts); what this process would write
// (deleting shipped events) the service does when asked.
const store = await openWhenHeld(config.dataDir, () => { send({ op: 'opening' }) }, () => openStore(config.dataDir, { mode: config.durability, syncIntervalMs: 0 }, undefined, { readOnly: true }), (why) => { log.warn(why) })
const target = { database: config.database, ...(config.cluster !== undefined ? { cluster: config.cluster } : {}) }
let backend: Backend | undefined
let shipper: Shipper | undefined
let stream: FunnelStream | undefined
let loader: StreamLoader | undefined
let stopping = false
/** Deletions asked of the service and not yet answered, by id. */
const drops = new Map<number, (error?: string) => void>()
/** How long a deletion may go unanswered before the shipper retries its batch (the sinks drop what they hold twice). */
const DROP_WAIT_MS = 60_000
let nextDrop = 1
const screen = (id: string) => store.screens.fresh(id)

function send (message: AnalyticsReply): void {
  // With a callback a write to a parent that just died is an ignored error, not an 'error' event that crashes this.
  if (process.connected) process.send!(message, undefined, undefined, () => {})
}

/** Opens ClickHouse and its schema, retrying while it is unreachable; the funnel log waits in LMDB meanwhile. */
async function connect (): Promise<void> {
  const b = await retryWithBackoff(async () => {
    const b = await openBackend({ dataDir: config.dataDir, ...(config.url !== undefined ? { url: config.url } : {}), ...(config.user !== undefined ? { user: config.user } : {}), ...(config.password !== undefined ? { password: config.password } : {}), ...(config.cluster !== undefined ? { cluster: config.cluster } : {}) })
    for (const statement of ddl(target)) await b.exec(statement)
    const columns = async (table: string) => new Set((await b.query('SELECT name FROM system.columns WHERE database = {database:String} AND table = {table:String}', { database: target.database, table })).map((r) => String(r.name)))
    for (const statement of await upgrades(target, columns)) await b.exec(statement)
    return b
  }, () => stopping, (err, retryInMs) => {
    const error = err instanceof Error ? err.message : String(err)
    send({ op: 'unavailable', error })
    log.warn('ClickHouse unavailable; retrying', { error, retry_in_ms: retryInMs })
  })
  if (b === undefined) return
  backend = b
  log.info('ClickHouse connected', { backend: b.name, parameters: b.binding })
  send({ op: 'ready', backend: b.name })
  await ship(b)
}

/**
 * Starts the shipper. Into ClickHouse when this node's ClickHouse is the only one to fill: on one node, and on a
 * cluster node whose nodes share one ClickHouse server (CLICKHOUSE_URL), each node shipping only its own events, each
 * once, as a node alone does. Into the funnel stream when each node has its own ClickHouse (chDB), with the loader that
 * fills it with every node's events: a report through any node must cover the cluster.
 */
async function ship (b: Backend): Promise<void> {
  const shipped = (count: number) => send({ op: 'shipped', count })
  const drop = (last: number) => new Promise<void>((resolve, reject) => {
    const id = nextDrop++
    const timer = setTimeout(() => answered(`the service did not delete shipped events within ${DROP_WAIT_MS} ms`), DROP_WAIT_MS)
    const answered = (error?: string) => {
      clearTimeout(timer)
      drops.delete(id)
      if (error === undefined) resolve()
      else reject(new Error(`deleting shipped events: ${error}`))
    }
    drops.set(id, answered)
    send({ op: 'drop', id, last })
  })
  const engine = config.engine
  if (engine === undefined || config.url !== undefined) {
    shipper = new Shipper(store, new ClickHouseSink(b, target, screen, engine?.nodeId ?? ''), log, config.batchWaitMs, drop, shipped)
    void shipper.run()
    return
  }
  // The engine's client and the stream's modules load only on a cluster node: a node alone starts without them.
  const [{ connectFunnel }, { StreamLoader }, { StreamSink }] = await Promise.all([import('../cluster/funnel-stream.js'), import('./stream-loader.js'), import('./stream-sink.js')])
  stream = await connectFunnel(engine, `analytics_${engine.nodeId}`, log, () => stopping)
  if (stream === undefined) return
  shipper = new Shipper(store, new StreamSink(stream.js, engine.nodeId, engine.ackTimeoutMs), log, config.batchWaitMs, drop, shipped)
  loader = new StreamLoader(stream, b, target, screen, log)
  void shipper.run()
  void loader.run()
}

async function handle (m: AnalyticsRequest): Promise<void> {
  if (m.op === 'dropped') {
    drops.get(m.id)?.(m.error)
    return
  }
  try {
    if (backend === undefined) throw new Error('ClickHouse is not connected yet')
    if (m.op === 'query') {
      send({ op: 'result', id: m.id, rows: await backend.query(m.sql, m.params) })
      return
    }
    if (shipper === undefined) throw new Error('the funnel stream is not connected yet')
    if (m.op === 'drain') {
      await shipper.drain()
      await loader?.catchUp()
      send({ op: 'result', id: m.id, rows: [] })
    } else send({ op: 'result', id: m.id, rows: [{ pending: countLogged(store), shipped: shipper.shipped, backend: backend.name }] })
  } catch (err) {
    send({ op: 'error', id: m.id, error: err instanceof Error ? err.message : String(err) })
  }
}

async function stop (reason: string): Promise<void> {
  if (stopping) return
  stopping = true
  log.info('analytics process stopping', { reason })
  // Whatever hangs while closing, this process does not outlive its parent for long.
  setTimeout(() => process.exit(1), 10_000).unref()
  shipper?.stop()
  loader?.stop()
  await stream?.close().catch(() => {})
  await backend?.close()
  await store.close()
  process.exit(0)
}

process.on('message', (m: AnalyticsRequest) => { void handle(m) })
// Tells the three ways out apart in the log: after 'stopping' it was ours; alone, some library's process.exit; and an
// exit that logs neither line came from native code (chDB) bypassing Node.
process.on('exit', (code) => { log.info('analytics process exiting', { code }) })
process.on('disconnect', () => { void stop('the service closed the channel') })
process.on('SIGTERM', () => { void stop('SIGTERM') })
process.on('SIGINT', () => { /* the parent decides when this process stops */ })
// A parent that died while this process was still loading closed the channel before anyone listened for it.
if (!process.connected) void stop('the service was gone at start')
else void connect()
