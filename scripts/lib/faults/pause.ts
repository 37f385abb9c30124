import { readFileSync } from 'node:fs'

// A process frozen with SIGSTOP, as a long GC pause, a VM stall or a swapped-out host freezes a node: it keeps its
// sockets and its locks and believes, when it wakes, that no time has passed (issue 47). A stopped node must never be
// left behind: SIGTERM waits on a stopped process until it is continued, so a cluster's stop() would hang on it.

/** Every process this module has stopped and not yet continued. */
const stopped = new Set<number>()

// The last chance to continue them: a test that throws, or exits early, still leaves no node frozen. 'exit' handlers
// run synchronously, which process.kill is.
process.once('exit', () => { for (const pid of stopped) resumeQuietly(pid) })

function resumeQuietly (pid: number): void {
  try { process.kill(pid, 'SIGCONT') } catch {
    // Gone already: nothing left to continue.
  }
  stopped.delete(pid)
}

/** The process's state letter as /proc shows it ('T' while stopped); undefined once it is gone. */
export function processState (pid: number): string | undefined {
  try {
    // The command name in parentheses may hold spaces: the state is the first field after its closing parenthesis.
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3)
  } catch {
    return undefined
  }
}

/** A process stopped now; resume() continues it (once; later calls do nothing). */
export interface Paused {
  pid: number
  /** When it was stopped, in performance.now() milliseconds. */
  at: number
  resume (): void
}

/**
 * Stops pid with SIGSTOP and waits until the kernel shows it stopped (a signal is delivered asynchronously: a request
 * sent in the moment after kill() returns could still be served). The caller must resume(): pauseFor does so itself.
 */
export async function pause (pid: number): Promise<Paused> {
  process.kill(pid, 'SIGSTOP')
  stopped.add(pid)
  const deadline = performance.now() + 2000
  while (processState(pid) !== 'T' && processState(pid) !== undefined) {
    if (performance.now() > deadline) {
      resumeQuietly(pid)
      throw new Error(`process ${pid} did not stop within 2 s of SIGSTOP (state ${processState(pid)})`)
    }
    await new Promise((resolve) => setTimeout(resolve, 5))
  }
  const at = performance.now()
  return { pid, at, resume: () => { if (stopped.has(pid)) resumeQuietly(pid) } }
}

/**
 * Stops pid for ms (or until `during`, the load on the other nodes, has settled, if that is later), then continues it
 * whatever happens meanwhile; resolves with how long it was really stopped. A failure of `during` continues it at once.
 */
export async function pauseFor<T> (pid: number, ms: number, during: () => Promise<T> = async () => undefined as T): Promise<{ stoppedMs: number, result: T }> {
  const p = await pause(pid)
  let timer: NodeJS.Timeout | undefined
  // A timer may fire up to a millisecond before performance.now() says it is due (libuv rounds its clock): it is
  // rearmed until the whole pause has passed, as measured from the stop.
  const full = (resolve: () => void) => {
    const left = p.at + ms - performance.now()
    if (left <= 0) resolve()
    else timer = setTimeout(() => full(resolve), Math.ceil(left))
  }
  try {
    const [result] = await Promise.all([during(), new Promise<void>(full)])
    return { stoppedMs: performance.now() - p.at, result }
  } finally {
    // A failure of during leaves the timer: cleared, or it would hold the process open for the rest of ms.
    clearTimeout(timer)
    p.resume()
  }
}

/** Continues every process this module stopped (a test's teardown calls it; exit does too). */
export function resumeAll (): void {
  for (const pid of [...stopped]) resumeQuietly(pid)
}
