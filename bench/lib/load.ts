import autocannon from 'autocannon'
import { cpuMeter } from './cpu.js'

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
  /** Server CPU per request served, microseconds: utime + stime of the server's processes over requests. */
  cpuUs?: number
  /** The same for some of those processes apart, by name (measure's parts): a cluster node that only looks on. */
  cpuUsOf?: Record<string, number>
}

/** A measured run as its progress line ends it: requests/s, p99, CPU per request, failures. */
export function outcome (m: Measurement): string {
  return `${m.rps} req/s, p99 ${m.p99} ms${m.cpuUs !== undefined ? `, CPU ${m.cpuUs} us/req` : ''}${m.non2xx || m.errors ? `, ${m.non2xx} non-2xx, ${m.errors} errors` : ''}\n`
}

/**
 * Runs autocannon against a URL and reports requests/s, latency percentiles (ms) and, given the server's process id
 * (or the ids of every process it needs, such as the members of the engine it writes to), the CPU per request served
 * of those processes, children included; and the same for each of parts apart.
 */
export async function measure (name: string, opts: autocannon.Options & { pipelining: number, connections: number }, serverPid?: number | readonly number[], parts: Record<string, number | readonly number[]> = {}): Promise<Measurement> {
  process.stdout.write(`  ${name.padEnd(28)} -p ${String(opts.pipelining).padEnd(3)} c=${opts.connections} ${opts.duration !== undefined ? `${opts.duration}s` : `${opts.amount} requests`} ... `)
  const cpu = cpuMeter(serverPid)
  const partMeters = Object.entries(parts).map(([part, pids]) => [part, cpuMeter(pids)] as const)
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
  const cpuUs = cpu(result.requests.total)
  if (cpuUs !== undefined) m.cpuUs = cpuUs
  for (const [part, meter] of partMeters) {
    const us = meter(result.requests.total)
    if (us !== undefined) (m.cpuUsOf ??= {})[part] = us
  }
  process.stdout.write(outcome(m))
  return m
}
