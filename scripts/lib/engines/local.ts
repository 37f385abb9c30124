import { spawn, type ChildProcess, type SpawnOptions } from 'node:child_process'
import { accessSync, constants, readFileSync } from 'node:fs'
import { delimiter, join } from 'node:path'
import { createServer } from 'node:net'

/** A replicated engine running on this machine: its members, each a process of its own, and how to stop them. */
export interface LocalEngine {
  name: string
  /** Where clients connect, one address a member. */
  urls: string[]
  /** Each member by the name the engine knows it by, and its process (with its children, all of the member). */
  members (): Array<{ name: string, pid: number }>
  stop (): Promise<void>
}

/** Where an executable is: the first of dirs that has it, then PATH; undefined when it is not installed. */
export function findBinary (name: string, dirs: string[] = []): string | undefined {
  for (const dir of [...dirs, ...(process.env.PATH ?? '').split(delimiter)]) {
    try {
      accessSync(join(dir, name), constants.X_OK)
      return join(dir, name)
    } catch {
      // Not in this folder.
    }
  }
  return undefined
}

/**
 * A port nothing listens on now, on loopback, chosen below the kernel's ephemeral range. A member or node killed and
 * started again binds its port again, and a port from that range (what listen(0) gives) may meanwhile have become the
 * local end of any outgoing connection on the machine, which refuses the rebind (EADDRINUSE: CI saw a restarted node
 * exit so, and HAProxy's health check reach another test's node on the port). The kernel hands out no port below the
 * range; picks are random, so that concurrent clusters rarely try the same one, and a taken one is skipped.
 */
export async function freePort (): Promise<number> {
  const top = Math.max(ephemeralLow(), FIRST_CHOSEN_PORT + 1000)
  for (let attempt = 0; ; attempt++) {
    const port = FIRST_CHOSEN_PORT + Math.floor(Math.random() * (top - FIRST_CHOSEN_PORT))
    if (port !== FETCH_REFUSES && await listensOn(port)) return port
    if (attempt === 100) throw new Error(`no free port between ${FIRST_CHOSEN_PORT} and ${top} after 100 tries`)
  }
}

/** Above the ports services are configured on by default (8080, 9000, 5432...). */
const FIRST_CHOSEN_PORT = 10_000

/**
 * The one port above FIRST_CHOSEN_PORT on the Fetch standard's list of bad ports: Node's fetch refuses it ("bad
 * port"), and the tests and benchmarks reach their nodes with fetch (a bench/cluster run stopped so).
 */
const FETCH_REFUSES = 10_080

/** Where the kernel's ephemeral ports begin: Linux says; 32768 elsewhere (the lowest default of the others). */
function ephemeralLow (): number {
  try {
    return Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').split(/\s+/)[0])
  } catch {
    return 32768
  }
}

/** Whether port could be listened on, on loopback, now (it is let go at once). */
function listensOn (port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer()
    server.once('error', () => resolve(false))
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)))
  })
}

/** Starts a member process; its output is kept for the error that reports a member that would not start. */
export function member (command: string, args: string[], options: SpawnOptions = {}): ChildProcess & { output: () => string } {
  const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'], ...options })
  let out = ''
  const keep = (d: Buffer) => { out = (out + d.toString()).slice(-4000) }
  child.stdout?.on('data', keep)
  child.stderr?.on('data', keep)
  return Object.assign(child, { output: () => out })
}

/** Stops processes with SIGTERM and waits for each to exit (SIGKILL after 10 s). */
export async function stopAll (children: ChildProcess[]): Promise<void> {
  await Promise.all(children.map((child) => new Promise<void>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve()
    const timer = setTimeout(() => child.kill('SIGKILL'), 10_000)
    child.once('exit', () => { clearTimeout(timer); resolve() })
    child.kill('SIGTERM')
  })))
}

/**
 * Waits until a just-started engine is ready; if it never gets there, stops its members and throws with what they
 * printed, which says why.
 */
export async function readyOrStopped<E extends LocalEngine> (engine: E, children: Array<{ output: () => string }>, ready: () => Promise<void>): Promise<E> {
  try {
    await ready()
    return engine
  } catch (err) {
    await engine.stop()
    throw new Error(`${err instanceof Error ? err.message : String(err)}\n${children.map((c) => c.output()).join('\n')}`)
  }
}

/** Tries until ready answers, or throws what the last try threw after timeoutMs. */
export async function until<T> (ready: () => Promise<T>, timeoutMs: number, what: string): Promise<T> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    try {
      return await ready()
    } catch (err) {
      if (Date.now() > deadline) throw new Error(`${what}: not ready after ${timeoutMs} ms: ${err instanceof Error ? err.message : String(err)}`)
      await new Promise((resolve) => setTimeout(resolve, 200))
    }
  }
}
