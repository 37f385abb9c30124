import { execFile } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { cpuMeter } from './cpu.js'
import { outcome, type Measurement } from './load.js'

const run = promisify(execFile)

/** Whether wrk (Debian's package) is installed. */
export async function haveWrk (): Promise<boolean> {
  try {
    await run('wrk', ['--version'])
    return true
  } catch (err) {
    // wrk --version prints its banner and exits 1.
    return (err as { stdout?: string }).stdout?.includes('wrk') === true
  }
}

/**
 * Drives a URL with wrk: its C event loops cost the machine far less CPU than autocannon's JavaScript, so more of the
 * cores are left to the server. Reports requests/s, p50/p99 (ms), non-2xx and, given the server's pid, its CPU per
 * request (utime + stime of its process tree over requests served).
 */
export async function wrk (name: string, request: { url: string, method: string, body?: string, headers: Record<string, string> }, opts: { connections: number, threads: number, seconds: number }, serverPid?: number): Promise<Measurement> {
  process.stdout.write(`  ${name.padEnd(40)} wrk -t${opts.threads} -c${opts.connections} ${opts.seconds}s ... `)
  const dir = mkdtempSync(join(tmpdir(), 'oohbid-wrk-'))
  const script = join(dir, 'request.lua')
  // A long bracket of level 4 quotes any JSON body.
  writeFileSync(script, [
    `wrk.method = "${request.method}"`,
    ...(request.body !== undefined ? [`wrk.body = [====[${request.body}]====]`] : []),
    ...Object.entries(request.headers).map(([k, v]) => `wrk.headers["${k}"] = "${v}"`),
    'done = function(summary, latency, requests)',
    '  io.write(string.format("RESULT %d %d %d %d %d %d\\n", summary.requests, summary.duration, latency:percentile(50), latency:percentile(99), summary.errors.status, summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout))',
    'end'
  ].join('\n'))
  const cpu = cpuMeter(serverPid)
  const { stdout } = await run('wrk', [`-t${opts.threads}`, `-c${opts.connections}`, `-d${opts.seconds}s`, '-s', script, request.url], { maxBuffer: 1 << 20 })
  rmSync(dir, { recursive: true, force: true })
  const m = /RESULT (\d+) (\d+) (\d+) (\d+) (\d+) (\d+)/.exec(stdout)
  if (m === null) throw new Error(`wrk printed no result: ${stdout}`)
  const [requests, durationUs, p50Us, p99Us, non2xx, errors] = m.slice(1).map(Number) as [number, number, number, number, number, number]
  const result: Measurement = { name, pipelining: 1, connections: opts.connections, rps: Math.round(requests / (durationUs / 1e6)), p50: p50Us / 1000, p99: p99Us / 1000, non2xx, errors }
  const cpuUs = cpu(requests)
  if (cpuUs !== undefined) result.cpuUs = cpuUs
  process.stdout.write(outcome(result))
  return result
}
