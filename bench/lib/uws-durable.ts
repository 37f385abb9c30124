// The durable floor: the least a route that records what it was sent can do on this machine. uWS reads the request
// (the body, else the URL), JSON-parses a body, commits one LMDB put in a synchronous transaction (the durability
// oohbid gives: in the page cache before the reply) and answers the same bytes as oohbid would. What oohbid does on
// top of this is the gap its CPU per request shows.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { open } from 'lmdb'
import { environmentOptions } from '../../src/store/store.js'
import uWS from 'uWebSockets.js'

const file = process.env.BARE_BODY_FILE
const reply = file !== undefined ? readFileSync(file, 'utf8') : '{"success":true}'
const dir = mkdtempSync(join(tmpdir(), 'oohbid-durable-floor-'))
const root = open({ path: join(dir, 'floor.lmdb'), ...environmentOptions({ mode: 'os', syncIntervalMs: 1000 }) })
const log = root.openDB<unknown, number>('log', { keyEncoding: 'uint32' })
process.on('SIGTERM', () => { rmSync(dir, { recursive: true, force: true }); process.exit(0) })

let seq = 0
const commit = (doc: unknown) => root.transactionSync(() => log.putSync(++seq, { doc, at: Date.now() }))
const answer = (res: uWS.HttpResponse) => res.cork(() => res.writeHeader('Content-Type', 'application/json').end(reply))

uWS.App().get('/*', (res, req) => {
  commit(req.getUrl() + '?' + req.getQuery())
  answer(res)
}).post('/*', (res) => {
  const chunks: Buffer[] = []
  res.onAborted(() => {})
  res.onData((chunk, last) => {
    chunks.push(Buffer.from(new Uint8Array(chunk)))
    if (!last) return
    commit(JSON.parse(Buffer.concat(chunks).toString()))
    answer(res)
  })
}).listen('127.0.0.1', 0, (socket) => {
  process.stdout.write(`durable floor listening on http://127.0.0.1:${uWS.us_socket_local_port(socket)}\n`)
})
