import { readFileSync } from 'node:fs'
import http from 'node:http'
import https from 'node:https'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'

/** One request a receiver got. */
export interface Received {
  method: string
  path: string
  query: URLSearchParams
  headers: http.IncomingHttpHeaders
  body: string
}

export interface Receiver {
  url: string
  received: Received[]
  /** Answers the next n requests with this status before answering 200 again. */
  failNext (n: number, status?: number): void
}

const TLS = join(process.cwd(), 'test', 'fixtures', 'tls')

/**
 * A notice receiver on loopback: plain HTTP, or HTTPS with the test certificate (trusted through
 * NODE_EXTRA_CA_CERTS, as npm test sets it). Records every request; closed at teardown.
 */
export async function startReceiver (t: { teardown (fn: () => unknown): void }, tls = false): Promise<Receiver> {
  const received: Received[] = []
  let failing = 0
  let failStatus = 500
  const handler: http.RequestListener = (req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      const url = new URL(req.url ?? '/', 'http://x')
      received.push({ method: req.method ?? '', path: url.pathname, query: url.searchParams, headers: req.headers, body: Buffer.concat(chunks).toString() })
      if (failing > 0) {
        failing--
        res.writeHead(failStatus).end()
        return
      }
      res.writeHead(200, { 'content-type': 'text/plain' }).end('ok')
    })
  }
  const server = tls
    ? https.createServer({ key: readFileSync(join(TLS, 'localhost.key')), cert: readFileSync(join(TLS, 'localhost.pem')) }, handler)
    : http.createServer(handler)
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise((resolve) => { server.closeAllConnections(); server.close(resolve) }))
  const { port } = server.address() as AddressInfo
  return {
    url: `${tls ? 'https' : 'http'}://${tls ? 'localhost' : '127.0.0.1'}:${port}`,
    received,
    failNext (n, status = 500) {
      failing = n
      failStatus = status
    }
  }
}
