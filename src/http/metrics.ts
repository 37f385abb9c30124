import { monitorEventLoopDelay } from 'node:perf_hooks'

const BUCKETS = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5]

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

function escape (v: string): string {
  return v.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n')
}

/**
 * Prometheus counters and histograms for the HTTP layer. Kept in plain maps keyed by label values: a request costs a
 * few map lookups, and text is built only when /metrics is scraped.
 */
export class Metrics {
  readonly #series = new Map<string, RouteSeries>()
  readonly #rejections = new Map<string, number>()
  readonly #counters = new Map<string, { help: string, values: Map<string, number> }>()
  readonly #loop = monitorEventLoopDelay({ resolution: 10 })
  inFlight = 0

  constructor () {
    this.#loop.enable()
  }

  /** The series of a route pattern (never a raw path, which would make cardinality unbounded). */
  route (method: string, route: string): RouteSeries {
    const key = `${method.toUpperCase()}\u0000${route}`
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

  /** Records a request refused by the rate limiter. */
  rejected (group: string): void {
    this.#rejections.set(group, (this.#rejections.get(group) ?? 0) + 1)
  }

  /** The Prometheus text exposition (version 0.0.4). */
  render (extra: Record<string, number> = {}): string {
    const out: string[] = []
    out.push('# HELP oohbid_http_requests_total HTTP requests by method, route and status.', '# TYPE oohbid_http_requests_total counter')
    for (const s of this.#series.values()) {
      for (const [status, n] of s.byStatus) out.push(`oohbid_http_requests_total{method="${s.method}",route="${escape(s.route)}",status="${status}"} ${n}`)
    }
    out.push('# HELP oohbid_http_request_duration_seconds Time from request arrival to the last byte written.', '# TYPE oohbid_http_request_duration_seconds histogram')
    for (const s of this.#series.values()) {
      if (s.count === 0) continue
      const labels = `method="${s.method}",route="${escape(s.route)}"`
      BUCKETS.forEach((le, i) => out.push(`oohbid_http_request_duration_seconds_bucket{${labels},le="${le}"} ${s.buckets[i]}`))
      out.push(`oohbid_http_request_duration_seconds_bucket{${labels},le="+Inf"} ${s.count}`)
      out.push(`oohbid_http_request_duration_seconds_sum{${labels}} ${s.sum}`, `oohbid_http_request_duration_seconds_count{${labels}} ${s.count}`)
    }
    out.push('# HELP oohbid_rate_limit_rejections_total Requests refused with 429, by rate group.', '# TYPE oohbid_rate_limit_rejections_total counter')
    for (const [group, n] of this.#rejections) out.push(`oohbid_rate_limit_rejections_total{group="${group}"} ${n}`)
    for (const [name, c] of this.#counters) {
      out.push(`# HELP ${name} ${c.help}`, `# TYPE ${name} counter`)
      for (const [labels, n] of c.values) out.push(`${name}${labels ? `{${labels}}` : ''} ${n}`)
    }
    out.push('# HELP oohbid_http_requests_in_flight Requests accepted and not yet answered.', '# TYPE oohbid_http_requests_in_flight gauge', `oohbid_http_requests_in_flight ${this.inFlight}`)
    out.push('# HELP oohbid_event_loop_delay_p99_seconds Event-loop delay, 99th percentile since the last scrape.', '# TYPE oohbid_event_loop_delay_p99_seconds gauge', `oohbid_event_loop_delay_p99_seconds ${this.#loop.percentile(99) / 1e9}`)
    this.#loop.reset()
    const mem = process.memoryUsage()
    out.push('# HELP process_resident_memory_bytes Resident memory.', '# TYPE process_resident_memory_bytes gauge', `process_resident_memory_bytes ${mem.rss}`)
    out.push('# HELP nodejs_heap_used_bytes V8 heap in use.', '# TYPE nodejs_heap_used_bytes gauge', `nodejs_heap_used_bytes ${mem.heapUsed}`)
    for (const [name, value] of Object.entries(extra)) out.push(`# TYPE ${name} gauge`, `${name} ${value}`)
    return out.join('\n') + '\n'
  }
}
