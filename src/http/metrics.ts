import { monitorEventLoopDelay } from 'node:perf_hooks'

const BUCKETS = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5]

interface Series {
  count: number
  sum: number
  buckets: number[]
}

function escape (v: string): string {
  return v.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n')
}

/**
 * Prometheus counters and histograms for the HTTP layer. Kept in plain maps keyed by label values: a request costs a
 * few map lookups, and text is built only when /metrics is scraped.
 */
export class Metrics {
  readonly #requests = new Map<string, number>()
  readonly #latency = new Map<string, Series>()
  readonly #rejections = new Map<string, number>()
  readonly #loop = monitorEventLoopDelay({ resolution: 10 })
  inFlight = 0

  constructor () {
    this.#loop.enable()
  }

  /** Records one finished request. route is the route pattern (never the raw path, to bound cardinality). */
  observe (method: string, route: string, status: number, seconds: number): void {
    const key = `${method.toUpperCase()}\u0000${route}\u0000${status}`
    this.#requests.set(key, (this.#requests.get(key) ?? 0) + 1)
    const lkey = `${method.toUpperCase()}\u0000${route}`
    let s = this.#latency.get(lkey)
    if (s === undefined) {
      s = { count: 0, sum: 0, buckets: BUCKETS.map(() => 0) }
      this.#latency.set(lkey, s)
    }
    s.count++
    s.sum += seconds
    for (let i = 0; i < BUCKETS.length; i++) if (seconds <= BUCKETS[i]!) s.buckets[i]!++
  }

  /** Records a request refused by the rate limiter. */
  rejected (group: string): void {
    this.#rejections.set(group, (this.#rejections.get(group) ?? 0) + 1)
  }

  /** The Prometheus text exposition (version 0.0.4). */
  render (extra: Record<string, number> = {}): string {
    const out: string[] = []
    out.push('# HELP oohbid_http_requests_total HTTP requests by method, route and status.', '# TYPE oohbid_http_requests_total counter')
    for (const [key, n] of this.#requests) {
      const [method, route, status] = key.split('\u0000') as [string, string, string]
      out.push(`oohbid_http_requests_total{method="${method}",route="${escape(route)}",status="${status}"} ${n}`)
    }
    out.push('# HELP oohbid_http_request_duration_seconds Time from request arrival to the last byte written.', '# TYPE oohbid_http_request_duration_seconds histogram')
    for (const [key, s] of this.#latency) {
      const [method, route] = key.split('\u0000') as [string, string]
      const labels = `method="${method}",route="${escape(route)}"`
      BUCKETS.forEach((le, i) => out.push(`oohbid_http_request_duration_seconds_bucket{${labels},le="${le}"} ${s.buckets[i]}`))
      out.push(`oohbid_http_request_duration_seconds_bucket{${labels},le="+Inf"} ${s.count}`)
      out.push(`oohbid_http_request_duration_seconds_sum{${labels}} ${s.sum}`, `oohbid_http_request_duration_seconds_count{${labels}} ${s.count}`)
    }
    out.push('# HELP oohbid_rate_limit_rejections_total Requests refused with 429, by rate group.', '# TYPE oohbid_rate_limit_rejections_total counter')
    for (const [group, n] of this.#rejections) out.push(`oohbid_rate_limit_rejections_total{group="${group}"} ${n}`)
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
