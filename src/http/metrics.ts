import { monitorEventLoopDelay } from 'node:perf_hooks'
import type { FunnelEvent } from '../generated/types.js'
import { processSeries } from './process-metrics.js'

/** Latency histogram bounds, seconds (Prometheus le). */
export const BUCKETS = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5]

/** One route's counters: requests by status and the latency histogram. A request costs a few array writes. */
export class RouteSeries {
  readonly byStatus = new Map<number, number>()
  count = 0
  sum = 0
  readonly buckets = BUCKETS.map(() => 0)

  constructor (readonly method: string, readonly route: string) {}

  /** Records one finished request. */
  observe (status: number, seconds: number): void {
    this.byStatus.set(status, (this.byStatus.get(status) ?? 0) + 1)
    this.count++
    this.sum += seconds
    for (let i = BUCKETS.length - 1; i >= 0 && seconds <= BUCKETS[i]!; i--) this.buckets[i]!++
  }
}

/** How a route's series is keyed, in a thread and when the threads' are added up. */
export function seriesKey (method: string, route: string): string {
  return `${method.toUpperCase()}\u0000${route}`
}

function escape (v: string): string {
  return v.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n')
}

/** One thread's metrics as plain data, to cross to the thread that answers /metrics (structured clone). */
export interface MetricsSnapshot {
  thread: number
  series: Array<{ method: string, route: string, byStatus: Array<[number, number]>, count: number, sum: number, buckets: number[] }>
  rejections: Array<[string, number]>
  counters: Array<{ name: string, help: string, values: Array<[string, number]> }>
  inFlight: number
  /** Event-loop delay p99 since the last scrape, seconds. */
  loopP99: number
  heapUsed: number
  /** The thread's write transactions and the seconds they held LMDB's writer lock (Store.held). */
  writes: { transactions: number, seconds: number }
  /** The screens this thread gave the most spots in the last one to two minutes: [screen_id, spots]. */
  screens: Array<[string, number]>
}

/** Screens each thread reports for the dashboard's top screens. */
const TOP_SCREENS = 20

/**
 * Prometheus counters and histograms, one set per thread. Kept in plain maps keyed by label values: a request costs a
 * few map lookups, and text is built only when /metrics is scraped, from every thread's snapshot (render).
 */
export class Metrics {
  readonly #series = new Map<string, RouteSeries>()
  readonly #rejections = new Map<string, number>()
  readonly #counters = new Map<string, { help: string, values: Map<string, number> }>()
  readonly #loop = monitorEventLoopDelay({ resolution: 10 })
  /** Spots by screen in this minute and the one before: a sliding window without a timer. */
  #minute = 0
  #current = new Map<string, number>()
  #previous = new Map<string, number>()
  inFlight = 0

  /** thread: 0 for the supervisor, 1.. for the hot threads; writes: its store's held counters. */
  constructor (readonly thread = 0, readonly writes: { transactions: number, seconds: number } = { transactions: 0, seconds: 0 }) {
    this.#loop.enable()
  }

  /** The series of a route pattern (never a raw path, which would make cardinality unbounded). */
  route (method: string, route: string): RouteSeries {
    const key = seriesKey(method, route)
    let s = this.#series.get(key)
    if (s === undefined) {
      s = new RouteSeries(method.toUpperCase(), route)
      this.#series.set(key, s)
    }
    return s
  }

  /** Adds to a counter of the service's own (notices sent, auctions run); labels as Prometheus text, e.g. kind="nurl". */
  inc (name: string, help: string, labels = '', by = 1): void {
    let c = this.#counters.get(name)
    if (c === undefined) {
      c = { help, values: new Map() }
      this.#counters.set(name, c)
    }
    c.values.set(labels, (c.values.get(labels) ?? 0) + by)
  }

  /**
   * Records a spot the waterfall decided on a screen (tier closed: asked outside its hours, nothing decided), and
   * whether a stored bid won it (open auction or deal).
   */
  spot (screenId: string, tier: string, wonByBid: boolean, now: number): void {
    this.inc('oohbid_spots_total', 'Spots decided by the waterfall, by tier (closed: asked outside operating hours).', `tier="${tier}"`)
    if (wonByBid) this.inc('oohbid_spots_won_by_bids_total', 'Spots a stored bid won (open auction, PMP and Preferred deals).')
    if (tier === 'closed') return
    this.#roll(now)
    this.#current.set(screenId, (this.#current.get(screenId) ?? 0) + 1)
  }

  /** Counts what an operator watches of the funnel's events: plays completed on our player and proofs issued. */
  recorded (event: FunnelEvent): void {
    if (event.stage === 'play_completed') this.inc('oohbid_plays_completed_total', 'Spots the player reported played to the end (play_completed), by waterfall tier.', `tier="${event.tier ?? 'none'}"`)
    else if (event.stage === 'proof') this.inc('oohbid_proofs_issued_total', 'Signed proofs of play issued, by verification tier.', `tier="${event.tier ?? 'none'}"`)
  }

  #roll (now: number): void {
    const minute = Math.floor(now / 60_000)
    if (minute === this.#minute) return
    this.#previous = minute === this.#minute + 1 ? this.#current : new Map()
    this.#current = new Map()
    this.#minute = minute
  }

  /** Records a request refused by the rate limiter. */
  rejected (group: string): void {
    this.#rejections.set(group, (this.#rejections.get(group) ?? 0) + 1)
  }

  /** This thread's numbers at `now`; a scrape (reset) starts the event-loop delay over, the dashboard's does not. */
  snapshot (now: number, reset = true): MetricsSnapshot {
    const loopP99 = this.#loop.percentile(99) / 1e9
    if (reset) this.#loop.reset()
    this.#roll(now)
    const screens = new Map(this.#previous)
    for (const [id, n] of this.#current) screens.set(id, (screens.get(id) ?? 0) + n)
    return {
      thread: this.thread,
      series: [...this.#series.values()].map((s) => ({ method: s.method, route: s.route, byStatus: [...s.byStatus], count: s.count, sum: s.sum, buckets: [...s.buckets] })),
      rejections: [...this.#rejections],
      counters: [...this.#counters].map(([name, c]) => ({ name, help: c.help, values: [...c.values] })),
      inFlight: this.inFlight,
      loopP99,
      heapUsed: process.memoryUsage().heapUsed,
      writes: { ...this.writes },
      screens: [...screens].sort((a, b) => b[1] - a[1]).slice(0, TOP_SCREENS)
    }
  }
}

function add<K> (into: Map<K, number>, key: K, n: number): void {
  into.set(key, (into.get(key) ?? 0) + n)
}

/** Every thread's snapshot added up: a route's series, a rate group's refusals, a counter's label sets. */
export function merge (snapshots: MetricsSnapshot[]): {
  series: Map<string, { method: string, route: string, byStatus: Map<number, number>, count: number, sum: number, buckets: number[] }>
  rejections: Map<string, number>
  counters: Map<string, { help: string, values: Map<string, number> }>
} {
  const series = new Map<string, { method: string, route: string, byStatus: Map<number, number>, count: number, sum: number, buckets: number[] }>()
  const rejections = new Map<string, number>()
  const counters = new Map<string, { help: string, values: Map<string, number> }>()
  for (const snap of snapshots) {
    for (const s of snap.series) {
      const key = seriesKey(s.method, s.route)
      let m = series.get(key)
      if (m === undefined) series.set(key, m = { method: s.method, route: s.route, byStatus: new Map(), count: 0, sum: 0, buckets: BUCKETS.map(() => 0) })
      for (const [status, n] of s.byStatus) add(m.byStatus, status, n)
      m.count += s.count
      m.sum += s.sum
      s.buckets.forEach((n, i) => { m.buckets[i]! += n })
    }
    for (const [group, n] of snap.rejections) add(rejections, group, n)
    for (const c of snap.counters) {
      let m = counters.get(c.name)
      if (m === undefined) counters.set(c.name, m = { help: c.help, values: new Map() })
      for (const [labels, n] of c.values) add(m.values, labels, n)
    }
  }
  return { series, rejections, counters }
}

/** A gauge the caller reads at scrape time, with its HELP text. */
export interface Gauge {
  help: string
  value: number
}

/** The Prometheus text exposition (version 0.0.4) of every thread's snapshot together, the process series and gauges. */
export function renderMetrics (snapshots: MetricsSnapshot[], gauges: Record<string, Gauge> = {}): string {
  const { series, rejections, counters } = merge(snapshots)
  const out: string[] = []
  out.push('# HELP oohbid_http_requests_total HTTP requests by method, route and status.', '# TYPE oohbid_http_requests_total counter')
  for (const s of series.values()) {
    for (const [status, n] of s.byStatus) out.push(`oohbid_http_requests_total{method="${s.method}",route="${escape(s.route)}",status="${status}"} ${n}`)
  }
  out.push('# HELP oohbid_http_request_duration_seconds Time from request arrival to the last byte written.', '# TYPE oohbid_http_request_duration_seconds histogram')
  for (const s of series.values()) {
    if (s.count === 0) continue
    const labels = `method="${s.method}",route="${escape(s.route)}"`
    BUCKETS.forEach((le, i) => out.push(`oohbid_http_request_duration_seconds_bucket{${labels},le="${le}"} ${s.buckets[i]}`))
    out.push(`oohbid_http_request_duration_seconds_bucket{${labels},le="+Inf"} ${s.count}`)
    out.push(`oohbid_http_request_duration_seconds_sum{${labels}} ${s.sum}`, `oohbid_http_request_duration_seconds_count{${labels}} ${s.count}`)
  }
  out.push('# HELP oohbid_hot_thread_requests_total HTTP requests answered by each hot thread (how evenly the kernel spreads connections).', '# TYPE oohbid_hot_thread_requests_total counter')
  for (const snap of snapshots) if (snap.thread > 0) out.push(`oohbid_hot_thread_requests_total{thread="${snap.thread}"} ${snap.series.reduce((n, s) => n + s.count, 0)}`)
  out.push('# HELP oohbid_lmdb_write_transactions_total LMDB write transactions committed or rolled back, by thread.', '# TYPE oohbid_lmdb_write_transactions_total counter')
  for (const snap of snapshots) out.push(`oohbid_lmdb_write_transactions_total{thread="${snap.thread}"} ${snap.writes.transactions}`)
  out.push('# HELP oohbid_lmdb_write_seconds_total Seconds write transactions held LMDB\'s one writer lock, by thread: no other thread commits meanwhile.', '# TYPE oohbid_lmdb_write_seconds_total counter')
  for (const snap of snapshots) out.push(`oohbid_lmdb_write_seconds_total{thread="${snap.thread}"} ${snap.writes.seconds}`)
  out.push('# HELP oohbid_rate_limit_rejections_total Requests refused with 429, by rate group.', '# TYPE oohbid_rate_limit_rejections_total counter')
  for (const [group, n] of rejections) out.push(`oohbid_rate_limit_rejections_total{group="${group}"} ${n}`)
  for (const [name, c] of counters) {
    out.push(`# HELP ${name} ${c.help}`, `# TYPE ${name} counter`)
    for (const [labels, n] of c.values) out.push(`${name}${labels ? `{${labels}}` : ''} ${n}`)
  }
  out.push('# HELP oohbid_http_requests_in_flight Requests accepted and not yet answered.', '# TYPE oohbid_http_requests_in_flight gauge', `oohbid_http_requests_in_flight ${snapshots.reduce((n, s) => n + s.inFlight, 0)}`)
  out.push('# HELP oohbid_event_loop_delay_p99_seconds Event-loop delay, 99th percentile since the last scrape, of the most delayed thread.', '# TYPE oohbid_event_loop_delay_p99_seconds gauge', `oohbid_event_loop_delay_p99_seconds ${Math.max(0, ...snapshots.map((s) => s.loopP99))}`)
  out.push(...processSeries())
  out.push('# HELP nodejs_heap_used_bytes V8 heap in use, all threads.', '# TYPE nodejs_heap_used_bytes gauge', `nodejs_heap_used_bytes ${snapshots.reduce((n, s) => n + s.heapUsed, 0)}`)
  for (const [name, { help, value }] of Object.entries(gauges)) out.push(`# HELP ${name} ${help}`, `# TYPE ${name} gauge`, `${name} ${value}`)
  return out.join('\n') + '\n'
}
