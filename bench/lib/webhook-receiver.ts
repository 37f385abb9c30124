// A webhook receiver for bench/webhooks, in its own process: HTTPS with the test certificate, answering 200 to every
// POST and counting them, with the delay from each event's occurred_at to its arrival. GET /stats reports, DELETE
// /stats resets; PUT /hold makes it hold its answers (so a backlog builds up) until DELETE /hold.
import { readFileSync } from 'node:fs'
import https from 'node:https'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

const tls = join(fileURLToPath(new URL('../../..', import.meta.url)), 'test', 'fixtures', 'tls')
let count = 0
let lags: number[] = []
let held: Array<() => void> | undefined
const server = https.createServer({ key: readFileSync(join(tls, 'localhost.key')), cert: readFileSync(join(tls, 'localhost.pem')), keepAliveTimeout: 60_000 }, (req, res) => {
  if (req.method === 'GET') {
    const sorted = [...lags].sort((a, b) => a - b)
    const at = (q: number) => sorted.length === 0 ? 0 : sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ count, p50: at(0.5), p99: at(0.99) }))
    return
  }
  if (req.url === '/hold') {
    if (req.method === 'PUT') held ??= []
    else {
      const waiting = held ?? []
      held = undefined
      for (const answer of waiting) answer()
    }
    res.writeHead(204).end()
    return
  }
  if (req.method === 'DELETE') {
    count = 0
    lags = []
    res.writeHead(204).end()
    return
  }
  const chunks: Buffer[] = []
  req.on('data', (c: Buffer) => chunks.push(c))
  req.on('end', () => {
    const answer = () => {
      count++
      const occurred = /"occurred_at":"([^"]+)"/.exec(Buffer.concat(chunks).toString())?.[1]
      if (occurred !== undefined) lags.push(Date.now() - Date.parse(occurred))
      res.writeHead(200, { 'content-type': 'text/plain' }).end('ok')
    }
    if (held !== undefined) held.push(answer)
    else answer()
  })
})
server.listen(0, '127.0.0.1', () => {
  process.stdout.write(`receiver listening on https://localhost:${(server.address() as AddressInfo).port}\n`)
})
