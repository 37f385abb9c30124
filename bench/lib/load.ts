import autocannon from 'autocannon'

/** One measured run. */
export interface Measurement {
  name: string
  pipelining: number
  connections: number
  rps: number
  p50: number
  p99: number
  non2xx: number
  errors: number
}

/** Runs autocannon against a URL and reports requests/s and latency percentiles (ms). */
export async function measure (name: string, opts: autocannon.Options & { pipelining: number, connections: number }): Promise<Measurement> {
  process.stdout.write(`  ${name.padEnd(28)} -p ${String(opts.pipelining).padEnd(3)} c=${opts.connections} ${opts.duration}s ... `)
  const result = await new Promise<autocannon.Result>((resolve, reject) => {
    autocannon(opts, (err, res) => err ? reject(err) : resolve(res))
  })
  const m: Measurement = {
    name,
    pipelining: opts.pipelining,
    connections: opts.connections,
    rps: Math.round(result.requests.average),
    p50: result.latency.p50,
    p99: result.latency.p99,
    non2xx: result.non2xx,
    errors: result.errors + result.timeouts
  }
  process.stdout.write(`${m.rps} req/s, p99 ${m.p99} ms${m.non2xx || m.errors ? `, ${m.non2xx} non-2xx, ${m.errors} errors` : ''}\n`)
  return m
}
