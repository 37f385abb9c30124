// The durable floor: the least a route that records what it was sent can do on this machine. uWS reads the request
// (the body, else the URL), JSON-parses a body, commits in a synchronous transaction (the durability oohbid gives: in
// the page cache before the reply) and answers the same bytes as oohbid would. What oohbid does on top of this is the
// gap its CPU per request shows.
//
// DURABLE_WRITES=1 (the floor every benchmark compares with): one put. DURABLE_WRITES=4: the four records a bid
// commits (the bid under its screen, imp and seat, its expiry entry, the seat's hour of counters read and written
// back, and a funnel event appended), in four tables opened as the service opens them, in one transaction.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { open } from 'lmdb'
import { environmentOptions } from '../../src/store/store.js'
import uWS from 'uWebSockets.js'
import { readBody } from './uws-body.js'

const file = process.env.BARE_BODY_FILE
const reply = file !== undefined ? readFileSync(file, 'utf8') : '{"success":true}'
const writes = Number(process.env.DURABLE_WRITES ?? 1)
const dir = mkdtempSync(join(tmpdir(), 'oohbid-durable-floor-'))
const root = open({ path: join(dir, 'floor.lmdb'), ...environmentOptions({ mode: 'os', syncIntervalMs: 1000 }) })
const shared = { keyEncoding: 'ordered-binary' as const, sharedStructuresKey: Symbol.for('structures') }
const log = root.openDB<unknown, number>('log', { keyEncoding: 'uint32' })
const bids = root.openDB<unknown, string[]>('bids', shared)
const expiry = root.openDB<1, Array<string | number>>('bid_expiry', { keyEncoding: 'ordered-binary' })
const stats = root.openDB<{ bids: number, cpm_sum: number }, Array<string | number>>('stats', shared)
const funnel = root.openDB<unknown, number>('funnel_events', shared)
process.on('SIGTERM', () => { rmSync(dir, { recursive: true, force: true }); process.exit(0) })

let seq = 0
const HOUR = 3_600_000
function four (doc: unknown, at: number): void {
  const d = doc as { seatbid?: Array<{ bid?: Array<{ impid?: string, price?: number }> }> }
  const bid = d.seatbid?.[0]?.bid?.[0] ?? {}
  const impid = bid.impid ?? String(seq)
  bids.putSync(['screen', impid, 'seat'], { ...bid, received_at: at })
  expiry.putSync([at + HOUR, 'screen', impid, 'seat'], 1)
  const hour = ['seat', Math.floor(at / HOUR) * HOUR]
  const counters = stats.get(hour) ?? { bids: 0, cpm_sum: 0 }
  stats.putSync(hour, { bids: counters.bids + 1, cpm_sum: counters.cpm_sum + (bid.price ?? 0) })
  funnel.putSync(at * 1000 + (seq % 1000), { stage: 'bid_received', at, seat_id: 'seat', bids: [{ screen_id: 'screen', price: bid.price ?? 0, status: 'accepted' }] })
}
const commit = (doc: unknown) => root.transactionSync(() => {
  const at = Date.now()
  seq++
  if (writes === 4) four(doc, at)
  else log.putSync(seq, { doc, at })
})
const answer = (res: uWS.HttpResponse) => res.cork(() => res.writeHeader('Content-Type', 'application/json').end(reply))

uWS.App().get('/*', (res, req) => {
  commit(req.getUrl() + '?' + req.getQuery())
  answer(res)
}).post('/*', (res) => {
  res.onAborted(() => {})
  readBody(res, (body) => {
    commit(JSON.parse(body))
    answer(res)
  })
}).listen('127.0.0.1', 0, (socket) => {
  process.stdout.write(`durable floor listening on http://127.0.0.1:${uWS.us_socket_local_port(socket)}\n`)
})
