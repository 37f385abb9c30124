import { mkdtempSync, rmSync } from 'node:fs'
import { connect } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { ManualClock, RunningClock } from '../../src/clock.js'
import { loadConfig } from '../../src/config.js'
import { createLogger } from '../../src/log.js'
import { startService, type Service } from '../../src/service.js'

/** What a test sees of one HTTP exchange. */
export interface Reply {
  status: number
  headers: Headers
  body: any
  text: string
}

export interface RequestOptions {
  body?: unknown
  /** Sent as Authorization: Bearer. */
  key?: string
  headers?: Record<string, string>
  /** A raw body string sent as is (with the given content-type, default application/json). */
  raw?: string
}

export interface TestService {
  service: Service
  url: string
  port: number
  clock: ManualClock
  dataDir: string
  adminToken: string
  /** Log lines the service wrote (level error and above). */
  logs: string[]
  request (method: string, path: string, opts?: RequestOptions): Promise<Reply>
  admin (method: string, path: string, body?: unknown): Promise<Reply>
  /**
   * Onboards a seat from its own client address (X-Forwarded-For through the trusted loopback proxy). Reading `key`
   * throws, with the reply, when the onboarding minted none.
   */
  onboard (seatId: string, extra?: Record<string, unknown>, key?: string): Promise<{ reply: Reply, key: string }>
  /** Counts of every store table and the outbox, to show that a refused request wrote nothing. */
  snapshot (): Record<string, number>
  /** Requests the service has accepted and not yet answered, from /metrics (the scrape that reads it counts too). */
  inFlight (): Promise<number>
}

let ipCounter = 0
/** A fresh client address for routes limited per address. */
export function freshIp (): string {
  ipCounter++
  return `198.51.${(ipCounter >> 8) & 255}.${ipCounter & 255}`
}

export interface TestServiceOptions {
  /** The clock runs with real time (a browser test's player keeps real time) instead of standing still. */
  running?: boolean
  /**
   * Where the clock starts (ms), instead of now: a test that plays at a given hour starts there, so that nothing the
   * service does at its start reads another time, whatever day the suite runs on.
   */
  at?: number
}

/**
 * Starts the real service on a free loopback port over a fresh LMDB in a temp dir; stopped at teardown. Its clock
 * stands still unless moved (or running), at now unless told otherwise.
 */
export async function startTestService (t: { teardown (fn: () => unknown): void, passing?: () => boolean }, env: Record<string, string> = {}, options: TestServiceOptions = {}): Promise<TestService> {
  const dataDir = mkdtempSync(join(tmpdir(), 'oohbid-test-'))
  // Two hot threads unless HOT_THREADS says otherwise (CI runs the suite with 1 too): a request may reach either.
  const config = loadConfig({ PORT: '0', HOST: '127.0.0.1', DATA_DIR: dataDir, LOG_LEVEL: 'error', TRUST_PROXY: '127.0.0.1', ADMIN_TOKEN: 'test-admin-token', HOT_THREADS: process.env.HOT_THREADS ?? '2', ...env })
  const clock = options.running === true ? new RunningClock() : new ManualClock(options.at ?? Date.now())
  if (options.running === true && options.at !== undefined) clock.set(options.at)
  const logs: string[] = []
  const service = await startService({ config, clock, log: createLogger('error', (line) => { logs.push(line) }) })
  // Tests read the events they caused from the outbox: their own consumer keeps them from being compacted.
  service.outbox.register('test')
  t.teardown(async () => {
    // What the service logged (errors only) says why a request of a failed test got a 500: the runner prints a failed
    // file's stderr.
    if (t.passing?.() === false && logs.length > 0) process.stderr.write(`the service logged:\n${logs.join('\n')}\n`)
    await service.close()
    rmSync(dataDir, { recursive: true, force: true })
  })
  const url = service.url
  const request = async (method: string, path: string, opts: RequestOptions = {}): Promise<Reply> => {
    const headers: Record<string, string> = { ...opts.headers }
    if (opts.key !== undefined) headers.authorization = `Bearer ${opts.key}`
    let body: string | undefined
    if (opts.raw !== undefined) {
      body = opts.raw
      headers['content-type'] ??= 'application/json'
    } else if (opts.body !== undefined) {
      body = JSON.stringify(opts.body)
      headers['content-type'] ??= 'application/json'
    }
    const res = await fetch(url + path, { method, headers, body, redirect: 'manual' })
    const text = await res.text()
    // The test reads the store from this thread next: see what the hot thread that answered has committed.
    service.store.refresh()
    let parsed: unknown = text
    try { parsed = JSON.parse(text) } catch {}
    return { status: res.status, headers: res.headers, body: parsed, text }
  }
  const svc: TestService = {
    service,
    url,
    port: service.port,
    clock,
    dataDir,
    adminToken: service.adminToken,
    logs,
    request,
    admin: (method, path, body) => request(method, path, { key: service.adminToken, ...(body !== undefined ? { body } : {}) }),
    async onboard (seatId, extra = {}, key) {
      const reply = await request('POST', '/openrtb/v2/onboard', {
        body: { company_name: `${seatId} Media`, seat_id: seatId, contact_email: `buyer@${seatId.toLowerCase().replace(/[^a-z0-9]/g, '')}.example`, ...extra },
        headers: { 'x-forwarded-for': freshIp() },
        ...(key !== undefined ? { key } : {})
      })
      return {
        reply,
        // A test that goes on with the key of an onboarding that failed would only see 401s later: say why here.
        get key (): string {
          const minted = (reply.body as { data?: { api_key?: { key?: string } } })?.data?.api_key?.key
          if (reply.status !== 201 || minted === undefined) throw new Error(`onboarding ${seatId} gave no key: ${reply.status} ${reply.text}`)
          return minted
        }
      }
    },
    async inFlight () {
      return Number(/^oohbid_http_requests_in_flight (\d+)$/m.exec((await request('GET', '/metrics')).text)?.[1])
    },
    snapshot () {
      const s = service.store
      return {
        seats: s.seats.getCount(),
        keys: s.keys.getCount(),
        partners: s.partners.getCount(),
        idempotency: s.idempotency.getCount(),
        // Consumers compact the outbox at any moment; the last sequence number is what a request moves.
        outbox: s.meta.get('outbox:seq') as number ?? 0,
        audit: s.audit.getCount(),
        screens: s.screens.getCount(),
        fein: s.fein.getCount(),
        status: s.status.getCount(),
        players: s.players.getCount(),
        adslots: s.adslotIndex.getCount(),
        meta: s.meta.getCount(),
        creatives: s.creatives.getCount(),
        campaigns: s.campaigns.getCount(),
        assignments: s.assignments.getCount(),
        reservations: s.reservations.getCount(),
        deals: s.deals.getCount(),
        mediaBuys: s.mediaBuys.getCount(),
        booked: s.booked.getCount(),
        bids: s.bids.getCount(),
        bidExpiry: s.bidExpiry.getCount(),
        stats: s.stats.getCount(),
        spots: s.spots.getCount(),
        plays: s.plays.getCount(),
        notices: s.notices.getCount(),
        // The analytics process drains the funnel log at any moment; the last id appended is what a request moves.
        funnel: service.funnel.lastId
      }
    }
  }
  return svc
}

/**
 * Writes raw bytes on one connection and collects what comes back until the server closes or `ms` pass. Parts are
 * written gapMs apart, as over a slow link; a promise among them holds back the parts after it until it settles, so a
 * test decides when a request's last bytes arrive rather than racing a timer on a busy machine.
 */
export function rawExchange (port: number, payload: string | Array<string | Promise<unknown>>, ms = 1000, gapMs = 0): Promise<string> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1')
    let out = ''
    const finish = () => { socket.destroy(); resolve(out) }
    const timer = setTimeout(finish, ms)
    socket.on('data', (d) => { out += d.toString('latin1') })
    socket.on('close', () => { clearTimeout(timer); resolve(out) })
    socket.on('error', () => {})
    const parts = typeof payload === 'string' ? [payload] : payload
    const next = (i: number): void => {
      const part = parts[i]
      if (part === undefined || socket.destroyed) return
      if (typeof part !== 'string') {
        part.then(() => next(i + 1), () => next(i + 1))
        return
      }
      socket.write(part)
      setTimeout(() => next(i + 1), gapMs)
    }
    socket.on('connect', () => next(0))
  })
}

/** Splits a stream of HTTP/1.1 responses into status codes and bodies. */
export function parseResponses (stream: string): Array<{ status: number, headers: Record<string, string>, body: string }> {
  const out: Array<{ status: number, headers: Record<string, string>, body: string }> = []
  let rest = stream
  while (rest.startsWith('HTTP/1.1 ')) {
    const end = rest.indexOf('\r\n\r\n')
    if (end < 0) break
    const lines = rest.slice(0, end).split('\r\n')
    const headers: Record<string, string> = {}
    for (const l of lines.slice(1)) {
      const i = l.indexOf(':')
      headers[l.slice(0, i).toLowerCase()] = l.slice(i + 1).trim()
    }
    const length = Number(headers['content-length'] ?? 0)
    out.push({ status: Number(lines[0]!.split(' ')[1]), headers, body: rest.slice(end + 4, end + 4 + length) })
    rest = rest.slice(end + 4 + length)
  }
  return out
}
