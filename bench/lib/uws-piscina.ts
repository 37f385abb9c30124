// Baselines for the design choice of scoring inline: uWS handing each bid response to a piscina worker, one task per
// request (PISCINA_MODE=single) or micro-batched (PISCINA_MODE=batch: up to 64 bodies or 1 ms). Both must reply on a
// later tick, which uWS cannot do for pipelined requests: under -p 10 they show what oohbid avoids.
import { Piscina } from 'piscina'
import uWS from 'uWebSockets.js'
import { readBody } from './uws-body.js'

const pool = new Piscina({ filename: new URL('./piscina-worker.js', import.meta.url).href, minThreads: 1, maxThreads: 1 })
const batch = process.env.PISCINA_MODE === 'batch'
let pending: Array<{ body: string, done: (r: { status: number, body: string }) => void }> = []
let timer: NodeJS.Timeout | undefined

function flush (): void {
  const items = pending
  pending = []
  timer = undefined
  pool.run(items.map((i) => i.body)).then((results: Array<{ status: number, body: string }>) => results.forEach((r, k) => items[k]!.done(r)), () => {})
}

uWS.App().post('/openrtb/v2/bid', (res) => {
  let aborted = false
  res.onAborted(() => { aborted = true })
  readBody(res, (body) => {
    const done = (r: { status: number, body: string }) => {
      if (aborted) return
      res.cork(() => { res.writeStatus(r.status === 200 ? '200 OK' : '400 Bad Request').writeHeader('Content-Type', 'application/json').end(r.body) })
    }
    if (!batch) { pool.run(body).then(done, () => {}); return }
    pending.push({ body, done })
    if (pending.length >= 64) flush()
    else timer ??= setTimeout(flush, 1)
  })
}).listen('127.0.0.1', 0, (socket) => {
  process.stdout.write(`uws-piscina listening on http://127.0.0.1:${uWS.us_socket_local_port(socket)}\n`)
})
