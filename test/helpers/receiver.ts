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
  /** Holds the next n answers for ms (to outlast a sender's timeout, or to keep requests in flight). */
  delayNext (n: number, ms: number): void
}

export interface ReceiverOptions {
  /** The status to answer a request with (after failNext has had its turn); 200 by default. */
  respond?: (request: Received) => number
  /** How long to hold the answer to a request, in ms (0: answer at once). */
  delay?: (request: Received) => number
  /** Headers of a 3xx answer (a redirect a sender must not follow). */
  location?: string
}

const TLS = join(process.cwd(), 'test', 'fixtures', 'tls')

/**
 * A notice receiver on loopback: plain HTTP, or HTTPS with the test certificate (trusted through
 * NODE_EXTRA_CA_CERTS, as npm test sets it). Records every request; closed at teardown.
 */
export async function startReceiver (t: { teardown (fn: () => unknown): void }, tls = false, options: ReceiverOptions = {}): Promise<Receiver> {
  // The service trusts the test CA only when the process started with it (tap's test-env in package.json sets it):
  // without it every delivery to an https receiver fails its handshake, and a test would wait for nothing.
  if (tls && process.env.NODE_EXTRA_CA_CERTS === undefined) throw new Error('An https receiver needs NODE_EXTRA_CA_CERTS=test/fixtures/tls/ca.pem: run the file through tap (npx tap <file>), which sets it')
  const received: Received[] = []
  let failing = 0
  let failStatus = 500
  let delaying = 0
  let delayMs = 0
  const handler: http.RequestListener = (req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      const url = new URL(req.url ?? '/', 'http://x')
      const request = { method: req.method ?? '', path: url.pathname, query: url.searchParams, headers: req.headers, body: Buffer.concat(chunks).toString() }
      received.push(request)
      let status = 200
      if (failing > 0) {
        failing--
        status = failStatus
      } else if (options.respond !== undefined) {
        status = options.respond(request)
      }
      const answer = () => {
        if (res.destroyed) return
        if (status >= 300 && status < 400) res.writeHead(status, { location: options.location ?? '/moved' }).end()
        else res.writeHead(status, { 'content-type': 'text/plain' }).end(status < 300 ? 'ok' : 'no')
      }
      let hold = options.delay?.(request) ?? 0
      if (delaying > 0) {
        delaying--
        hold = delayMs
      }
      if (hold > 0) setTimeout(answer, hold)
      else answer()
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
    },
    delayNext (n, ms) {
      delaying = n
      delayMs = ms
    }
  }
}
