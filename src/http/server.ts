import { randomUUID } from 'node:crypto'
import { createServer } from 'node:net'
import uWS from 'uWebSockets.js'
import { ApiError } from '../errors.js'
import { StartRefused } from '../start-refused.js'
import { flatError, statusLine } from './envelope.js'
import { RequestCycle, type HttpDeps } from './request-cycle.js'
import type { Method, RouteDef } from './route.js'

/** A listening server and how to stop it. */
export interface HttpServer {
  port: number
  /** Registers the routes; done after listen so that URLs can name the port a PORT=0 start was given. */
  mount (routes: RouteDef[], deps: HttpDeps): void
  /** Stops accepting connections; requests already accepted still finish. */
  stopListening (): void
  /** Closes every remaining connection. */
  closeAll (): void
}

function patternRegex (path: string): RegExp {
  return new RegExp('^' + path.replace(/[.+?^${}()|[\]\\]/g, '\\$&').replace(/:\w+/g, '[^/]+') + '/?$')
}

/** The envelope a path's errors use when no route matched it. */
function envelopeForPath (path: string): RouteDef['envelope'] {
  return path.startsWith('/v1/') || path.startsWith('/inventory/') ? 'nested' : 'flat'
}

/**
 * Registers every route on a uWS app (each GET also as HEAD) and answers the rest with 404 route_not_found or 405 method_not_allowed (with
 * Allow), both in the envelope of the path's family.
 */
function mount (app: uWS.TemplatedApp, routes: RouteDef[], deps: HttpDeps): void {
  const matchers = routes.map((r) => ({ route: r, re: patternRegex(r.path) }))
  for (const route of routes) {
    const paramNames = [...route.path.matchAll(/:(\w+)/g)].map((m) => m[1]!)
    const register = route.method === 'delete' ? app.del : app[route.method]
    const series = deps.metrics.route(route.method, route.path)
    register.call(app, route.path, (res, req) => new RequestCycle(res, req, route, deps, paramNames, series).run())
    // HEAD is GET without the body (RFC 9110): crawlers probe sellers.json and app-ads.txt with it.
    if (route.method === 'get') app.head(route.path, (res, req) => new RequestCycle(res, req, route, deps, paramNames, series).run())
  }
  app.any('/*', (res, req) => {
    const path = req.getUrl()
    const method = req.getCaseSensitiveMethod().toUpperCase()
    const matching = matchers.filter((m) => m.re.test(path))
    const allowed = [...new Set(matching.flatMap((m) => m.route.method === 'get' ? ['GET', 'HEAD'] : [m.route.method.toUpperCase()]))]
    const error = allowed.length > 0
      ? new ApiError('method_not_allowed', `${method} is not allowed on ${path}; use ${allowed.join(', ')}.`, {}, { Allow: allowed.join(', ') })
      : new ApiError('route_not_found', `No route ${method} ${path}. The API is described at /openrtb/v2/openapi.json.`)
    const fallback: RouteDef = {
      method: method.toLowerCase() as Method,
      // The pattern, never the raw path, names the series in /metrics.
      path: matching[0]?.route.path ?? '(unmatched)',
      summary: 'unmatched',
      tag: 'none',
      envelope: envelopeForPath(path),
      auth: 'none',
      rateGroup: 'unauthenticated',
      handler: () => { throw error }
    }
    new RequestCycle(res, req, fallback, deps, [], deps.metrics.route(fallback.method, fallback.path)).run()
  })
}

/** Closes every connection an app holds (uWS's App.close, which its types do not declare). */
function closeConnections (app: uWS.TemplatedApp): void {
  (app as unknown as { close?: () => void }).close?.()
}

/** A port taken for the hot threads: held by this thread until they listen on it too. */
export interface ClaimedPort {
  port: number
  /** Lets go of this thread's hold (once the hot threads listen, or when the start fails). */
  release (): void
}

/**
 * The port the hot threads will share, refused when another process listens on it, and held until they listen on it.
 * uWS listens with SO_REUSEPORT, so a second service on the same port would quietly share its traffic: a plain bind,
 * without that option, fails while anyone else holds the port (PORT=0 takes a free one that way). A port only probed
 * and let go could be handed to another service starting with PORT=0 while the hot threads started (the test suite
 * starts hundreds side by side), and the two would then split each other's connections. So this thread holds the port
 * at once with a uWS socket of its own, which the hot threads join; the kernel hands no port in use to a bind for
 * port 0. A client that connects meanwhile is answered 503 with Retry-After.
 */
export async function claimPort (host: string, port: number): Promise<ClaimedPort> {
  for (let attempt = 1; ; attempt++) {
    const free = await probePort(host, port)
    const app = uWS.App().any('/*', (res) => {
      const err = new ApiError('service_unavailable', 'The service is starting; retry shortly.', { retry_after_seconds: 1 })
      res.writeStatus(statusLine(err.status)).writeHeader('Retry-After', '1').writeHeader('Content-Type', 'application/json')
        .end(flatError(err, `req_${randomUUID()}`))
    })
    const socket = await new Promise<uWS.us_listen_socket | false>((resolve) => app.listen(host, free, resolve))
    if (socket) {
      return {
        port: free,
        release () {
          uWS.us_listen_socket_close(socket)
          // Connections it took while the hot threads started: they go, and their clients reconnect to a hot thread.
          closeConnections(app)
        }
      }
    }
    closeConnections(app)
    // Taken in the moment between the probe and the hold: a free port is asked for again; a given one is refused.
    if (port !== 0 || attempt === 3) throw portInUse(host, free)
  }
}

/** The refusal when the port is taken: a probe's, or a hold's that lost the port in the moment after it. */
function portInUse (host: string, port: number): StartRefused {
  return new StartRefused(`Port ${port} on ${host} is in use by another process; stop it first, or set PORT to a free port.`)
}

/** A plain bind of the port (a free one for 0), let go at once: refused when any socket holds it. */
function probePort (host: string, port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer()
    probe.once('error', (err: NodeJS.ErrnoException) => {
      reject(err.code === 'EADDRINUSE' ? portInUse(host, port) : err)
    })
    probe.listen({ host, port, exclusive: true }, () => {
      const taken = (probe.address() as { port: number }).port
      probe.close(() => resolve(taken))
    })
  })
}

/** Starts listening on a port claimPort took (beside the other hot threads); routes are mounted on the returned server. */
export async function listen (host: string, port: number): Promise<HttpServer> {
  const app = uWS.App()
  return new Promise((resolve, reject) => {
    app.listen(host, port, (socket) => {
      if (!socket) return reject(new Error(`cannot listen on ${host}:${port}`))
      let listening: uWS.us_listen_socket | null = socket
      resolve({
        port: uWS.us_socket_local_port(socket),
        mount: (routes, deps) => mount(app, routes, deps),
        stopListening () {
          if (listening) uWS.us_listen_socket_close(listening)
          listening = null
        },
        closeAll () {
          closeConnections(app)
        }
      })
    })
  })
}
