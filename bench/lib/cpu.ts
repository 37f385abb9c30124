import { execFileSync } from 'node:child_process'
import { existsSync, readdirSync, readFileSync } from 'node:fs'

/** Microseconds per clock tick of /proc/<pid>/stat (USER_HZ, 100 on Linux). */
const TICK_US = (() => {
  try {
    return 1e6 / Number(execFileSync('getconf', ['CLK_TCK']).toString().trim())
  } catch {
    return 1e4
  }
})()

/** A process and every process below it (oohbid's analytics child and demo market included). */
export function processTree (pid: number): number[] {
  const out = [pid]
  for (let i = 0; i < out.length; i++) {
    const tasks = `/proc/${out[i]}/task`
    if (!existsSync(tasks)) continue
    for (const tid of readdirSync(tasks)) {
      const children = readFileSync(`${tasks}/${tid}/children`, 'utf8').trim()
      if (children !== '') out.push(...children.split(/\s+/).map(Number))
    }
  }
  return out
}

/** Which processes of a server's tree a figure counts. */
export type CpuScope =
  /** The service: its main process (supervisor and hot threads) and the analytics process; not the demo market. */
  | 'service'
  /** oohbid's analytics process alone. */
  | 'analytics'
  /** The demo market DEMO_FLEET starts (simulated screens and buyer): clients the service spawns, not the service. */
  | 'demo'

/** The scope a process of the tree under root belongs to, from its command line. */
function scopeOf (root: number, pid: number): CpuScope {
  if (pid === root) return 'service'
  let command = ''
  try {
    command = readFileSync(`/proc/${pid}/cmdline`, 'utf8')
  } catch {
    // Gone already: it used no more CPU.
  }
  if (command.includes('analytics/process.js')) return 'analytics'
  return command.includes('/scripts/') ? 'demo' : 'service'
}

/** utime + stime so far of one /proc stat file, a process's or a thread's (/proc/<pid>/task/<tid>/stat), in microseconds. */
export function statMicros (path: string): number {
  // Fields after the command name (which may hold spaces), from field 3 on: utime is 14, stime 15.
  const fields = readFileSync(path, 'utf8').split(') ')[1]!.split(' ')
  return (Number(fields[11]) + Number(fields[12])) * TICK_US
}

/**
 * utime + stime so far of the processes in a scope of the trees under roots (a server, or a server and the engine
 * members it writes to), in microseconds; undefined where /proc is not there.
 */
export function cpuMicros (roots: number | readonly number[], scope: CpuScope = 'service'): number | undefined {
  const list = typeof roots === 'number' ? [roots] : roots
  if (!list.every((pid) => existsSync(`/proc/${pid}/stat`))) return undefined
  let micros = 0
  for (const pid of list) {
    for (const p of processTree(pid)) {
      const of = scopeOf(pid, p)
      if (of !== scope && !(scope === 'service' && of === 'analytics')) continue
      try {
        micros += statMicros(`/proc/${p}/stat`)
      } catch {
        // A child that exited between the listing and the read used no more CPU.
      }
    }
  }
  return micros
}

/**
 * Starts metering a server's CPU (its processes in scope, by default the service's); the returned function gives the
 * microseconds per request over `served` requests, or undefined without /proc or for a run that served almost nothing
 * (a stalled baseline).
 */
export function cpuMeter (pid: number | readonly number[] | undefined, scope: CpuScope = 'service'): (served: number) => number | undefined {
  const before = pid !== undefined ? cpuMicros(pid, scope) : undefined
  return (served) => {
    const after = pid !== undefined ? cpuMicros(pid, scope) : undefined
    return before !== undefined && after !== undefined && served >= 100 ? Math.round((after - before) / served) : undefined
  }
}
