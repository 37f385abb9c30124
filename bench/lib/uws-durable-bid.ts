// Baseline: the least any durable bid intake can do on this machine. uWS reads the body, parses it, validates it
// with the same precompiled OpenRTB 2.6 validator, floor-checks each bid and commits each accepted bid to LMDB
// (one synchronous transaction per response, the same durability as oohbid: in the page cache before the reply)
// before answering. No auth, rate limit, imp verification, scoring, stats or funnel: what oohbid adds is the gap.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { open } from 'lmdb'
import { environmentOptions } from '../../src/store/store.js'
import uWS from 'uWebSockets.js'
import { BidResponse } from '../../src/generated/validators.js'
import { FLOOR } from './score-work.js'

const dir = mkdtempSync(join(tmpdir(), 'oohbid-durable-'))
const root = open({ path: join(dir, 'bids.lmdb'), ...environmentOptions({ mode: 'os', syncIntervalMs: 1000 }) })
const bids = root.openDB<unknown, string[]>('bids', { keyEncoding: 'ordered-binary', sharedStructuresKey: Symbol.for('structures') })
process.on('SIGTERM', () => { rmSync(dir, { recursive: true, force: true }); process.exit(0) })

interface Doc { id: string, seatbid?: Array<{ bid: Array<{ id: string, impid: string, price: number, adm?: string, nurl?: string }> }> }

uWS.App().post('/*', (res) => {
  const chunks: Buffer[] = []
  res.onAborted(() => {})
  res.onData((chunk, last) => {
    chunks.push(Buffer.from(new Uint8Array(chunk)))
    if (!last) return
    let reply: string
    let status = '200 OK'
    try {
      const doc = JSON.parse(Buffer.concat(chunks).toString()) as Doc
      if (!BidResponse(doc)) throw new Error('invalid')
      const results = (doc.seatbid ?? []).flatMap((sb) => sb.bid.map((b) => ({ bid_id: b.id, status: b.price >= FLOOR ? 'accepted' : 'rejected', bid: b })))
      root.transactionSync(() => { for (const r of results) if (r.status === 'accepted') bids.putSync([r.bid.impid, r.bid.id], { ...r.bid, response_id: doc.id, received_at: Date.now() }) })
      reply = JSON.stringify({ success: true, data: { id: doc.id, results: results.map(({ bid_id, status }) => ({ bid_id, status })) } })
    } catch {
      status = '400 Bad Request'
      reply = '{"success":false,"error_code":"invalid_bid_response","nbr":2}'
    }
    res.cork(() => res.writeStatus(status).writeHeader('Content-Type', 'application/json').end(reply))
  })
}).listen('127.0.0.1', 0, (socket) => {
  process.stdout.write(`uws durable listening on http://127.0.0.1:${uWS.us_socket_local_port(socket)}\n`)
})
