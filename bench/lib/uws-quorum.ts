// The engine prototype's front (issue 28): the durable floor's uWS server, whose one write goes to a replicated engine
// instead of a local LMDB file. A bid is answered only once a quorum of the engine's members holds it: a JetStream
// publish's acknowledgement (ENGINE=nats), or a PostgreSQL commit under quorum replication (ENGINE=postgres). The
// reply is written on a later tick, as any networked store's is, so the front serves clients that do not pipeline.
// QUORUM_BATCH=request writes each bid on its own; QUORUM_BATCH=turn writes the bids of an event-loop turn together
// (one message, one INSERT), as oohbid's hot-thread journal applies a turn's bids in one LMDB transaction.
import { readFileSync } from 'node:fs'
import { connect, type JetStreamClient } from 'nats'
import pg from 'pg'
import uWS from 'uWebSockets.js'
import { readBody } from './uws-body.js'

const file = process.env.BARE_BODY_FILE
const reply = file !== undefined ? readFileSync(file, 'utf8') : '{"success":true}'
const engine = process.env.ENGINE
const urls = (process.env.ENGINE_URLS ?? '').split(',')

/** Makes bid records durable on a quorum, together; resolves when they are. */
type Commit = (records: string[]) => Promise<void>

async function natsCommit (): Promise<Commit> {
  const nc = await connect({ servers: urls })
  const jsm = await nc.jetstreamManager()
  await jsm.streams.add({ name: 'BIDS', subjects: ['bids.>'], num_replicas: Math.min(3, urls.length) })
  const js: JetStreamClient = nc.jetstream()
  const encoder = new TextEncoder()
  return async (records) => { await js.publish('bids.screen', encoder.encode(records.join('\n'))) }
}

async function postgresCommit (): Promise<Commit> {
  const pool = new pg.Pool({ connectionString: urls[0], max: Number(process.env.PG_POOL ?? 32) })
  await pool.query('CREATE TABLE IF NOT EXISTS bids (id bigserial PRIMARY KEY, at bigint NOT NULL, doc text NOT NULL)')
  return async (records) => {
    await pool.query('INSERT INTO bids (at, doc) SELECT $1, unnest($2::text[])', [Date.now(), records])
  }
}

const write = engine === 'nats' ? await natsCommit() : engine === 'postgres' ? await postgresCommit() : undefined
if (write === undefined) throw new Error(`ENGINE must be nats or postgres, not ${engine}`)

/** The turn's records and the promise their one write settles. */
let turn: { records: string[], done: Promise<void> } | undefined
function commitWithTurn (record: string): Promise<void> {
  if (turn === undefined) {
    const records: string[] = []
    const done = new Promise<void>((resolve) => setImmediate(resolve)).then(() => { turn = undefined; return write!(records) })
    turn = { records, done }
  }
  turn.records.push(record)
  return turn.done
}
const commit = process.env.QUORUM_BATCH === 'turn' ? commitWithTurn : (record: string) => write([record])

uWS.App().post('/*', (res) => {
  let aborted = false
  res.onAborted(() => { aborted = true })
  readBody(res, (body) => {
    const doc = JSON.parse(body) as unknown
    commit(JSON.stringify({ doc, at: Date.now() })).then(() => {
      if (!aborted) res.cork(() => res.writeHeader('Content-Type', 'application/json').end(reply))
    }, (err: Error) => {
      if (!aborted) res.cork(() => res.writeStatus('503 Service Unavailable').end(JSON.stringify({ error: err.message })))
    })
  })
}).listen('127.0.0.1', 0, (socket) => {
  process.stdout.write(`${engine} quorum front (${process.env.QUORUM_BATCH ?? 'request'}) listening on http://127.0.0.1:${uWS.us_socket_local_port(socket)}\n`)
})
