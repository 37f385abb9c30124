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

/** A process and every process below it (oohbid's analytics child included). */
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

/**
 * utime + stime of a process tree so far, in microseconds; undefined where /proc is not there. children: only the
 * processes below pid (oohbid's analytics process).
 */
export function cpuMicros (pid: number, children = false): number | undefined {
  if (!existsSync(`/proc/${pid}/stat`)) return undefined
  let ticks = 0
  for (const p of processTree(pid).slice(children ? 1 : 0)) {
    try {
      // Fields after the command name (which may hold spaces), from field 3 on: utime is 14, stime 15.
      const fields = readFileSync(`/proc/${p}/stat`, 'utf8').split(') ')[1]!.split(' ')
      ticks += Number(fields[11]) + Number(fields[12])
    } catch {
      // A child that exited between the listing and the read used no more CPU.
    }
  }
  return ticks * TICK_US
}

/**
 * Starts metering a server's CPU (its whole process tree); the returned function gives the microseconds per request
 * over `served` requests, or undefined without /proc or for a run that served almost nothing (a stalled baseline).
 */
export function cpuMeter (pid: number | undefined): (served: number) => number | undefined {
  const before = pid !== undefined ? cpuMicros(pid) : undefined
  return (served) => {
    const after = pid !== undefined ? cpuMicros(pid) : undefined
    return before !== undefined && after !== undefined && served >= 100 ? Math.round((after - before) / served) : undefined
  }
}
