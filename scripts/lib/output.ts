/**
 * Writes progress lines to stdout for as long as someone reads them. The demo market's processes share the service's
 * stdout; when its reader goes (a pipe closed, a benchmark that stopped reading), a write fails with EPIPE, which
 * Node raises as an unhandled 'error' event: the simulated screens and buyer would die of a log line. They go on
 * silently instead.
 */
export function stdoutLines (prefix = ''): (line: string) => void {
  let open = true
  process.stdout.on('error', () => { open = false })
  return (line) => {
    if (open) process.stdout.write(`${prefix}${line}\n`)
  }
}
