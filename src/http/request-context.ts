import { randomUUID } from 'node:crypto'
import type { HttpRequest, HttpResponse } from 'uWebSockets.js'
import type { Clock } from '../clock.js'
import { clientIp, socketIp } from './client-address.js'
import type { Ctx, Method } from './route.js'

/** Shared by requests without a query string; nothing mutates a request's query. */
export const NO_QUERY = new URLSearchParams()

/** What a request is as the route callback delivers it, copied out of uWS's HttpRequest before the callback returns. */
export interface Arrived {
  ctx: Ctx
  /** The path's parameters as sent: decoded at admission, where a bad escape is a 400. */
  rawParams: string[]
  /** A HEAD request: run as the GET it mirrors, answered with its status and headers only. */
  head: boolean
}

/** Reads the request's line and headers (uWS frees req when the route callback returns). */
export function arrived (res: HttpResponse, req: HttpRequest, paramCount: number, clock: Clock, trustProxy: string[], warnings: string[]): Arrived {
  const headers: Record<string, string> = {}
  // A header sent more than once is one list, joined with commas (RFC 9110, 5.3): a proxy such as HAProxy adds its
  // own X-Forwarded-For line after the client's, and keeping only the last would drop the client's address.
  req.forEach((k, v) => { headers[k] = headers[k] === undefined ? v : `${headers[k]}, ${v}` })
  const rawParams: string[] = []
  for (let i = 0; i < paramCount; i++) rawParams.push(req.getParameter(i) ?? '')
  const query = req.getQuery()
  const method = req.getCaseSensitiveMethod().toLowerCase()
  const head = method === 'head'
  let ip: string | undefined
  const ctx: Ctx = {
    requestId: `req_${randomUUID()}`,
    method: (head ? 'get' : method) as Method,
    path: req.getUrl(),
    params: {},
    query: query ? new URLSearchParams(query) : NO_QUERY,
    q: undefined,
    headers,
    // Read when first asked (the rate limiter of address-keyed groups, the allowlists), while the response is open.
    get ip () {
      ip ??= clientIp(socketIp(res), headers['x-forwarded-for'], trustProxy)
      return ip
    },
    principal: undefined,
    body: undefined,
    dryRun: false,
    now: clock.now(),
    warn: (m) => { warnings.push(m) }
  }
  return { ctx, rawParams, head }
}
