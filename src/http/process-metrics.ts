import { readdirSync, readFileSync } from 'node:fs'

/** When this process started, in seconds since the epoch (rendered by the main thread, whose origin is the process's). */
const started = performance.timeOrigin / 1000

/** A number read from a /proc file by pattern, or undefined off Linux. */
function procNumber (path: string, pattern: RegExp): number | undefined {
  try {
    const m = pattern.exec(readFileSync(path, 'utf8'))
    return m !== null ? Number(m[1]) : undefined
  } catch {
    return undefined
  }
}

function openFds (): number | undefined {
  try {
    return readdirSync('/proc/self/fd').length
  } catch {
    return undefined
  }
}

/**
 * The standard process_* series every Prometheus client exports (prom-client's names), for the whole process: CPU of
 * every thread, memory, file descriptors and start time. Series a platform cannot give (no /proc) are left out.
 */
export function processSeries (): string[] {
  const cpu = process.cpuUsage()
  const memory = process.memoryUsage()
  const virtualKib = procNumber('/proc/self/status', /^VmSize:\s+(\d+) kB/m)
  const gauges: Array<[string, 'counter' | 'gauge', string, number | undefined]> = [
    ['process_cpu_user_seconds_total', 'counter', 'User CPU time spent, in seconds, all threads.', cpu.user / 1e6],
    ['process_cpu_system_seconds_total', 'counter', 'System CPU time spent, in seconds, all threads.', cpu.system / 1e6],
    ['process_cpu_seconds_total', 'counter', 'User and system CPU time spent, in seconds, all threads.', (cpu.user + cpu.system) / 1e6],
    ['process_start_time_seconds', 'gauge', 'Start time of the process since the epoch, in seconds.', Math.round(started)],
    ['process_resident_memory_bytes', 'gauge', 'Resident memory size, in bytes.', memory.rss],
    ['process_virtual_memory_bytes', 'gauge', 'Virtual memory size, in bytes.', virtualKib !== undefined ? virtualKib * 1024 : undefined],
    ['process_heap_bytes', 'gauge', 'Process heap size, in bytes.', memory.heapTotal],
    ['process_open_fds', 'gauge', 'Open file descriptors.', openFds()],
    ['process_max_fds', 'gauge', 'Maximum number of open file descriptors.', procNumber('/proc/self/limits', /^Max open files\s+(\d+)/m)]
  ]
  return gauges.filter(([, , , v]) => v !== undefined && Number.isFinite(v)).flatMap(([name, type, help, value]) => [`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`, `${name} ${value}`])
}
