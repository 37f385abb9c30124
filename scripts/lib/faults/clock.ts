import { execFileSync } from 'node:child_process'
import { existsSync, writeFileSync } from 'node:fs'

// A node whose clock is off (issue 47): libfaketime preloaded into the node's process moves what the wall clock
// (Date.now, CLOCK_REALTIME) says by an offset, and only that: FAKETIME_DONT_FAKE_MONOTONIC keeps timers and
// performance.now on real time, as an NTP step or a drifting host clock would. The preload passes to the node's
// children (the analytics process) through the environment. Measured on Node 20: Date.now() +60 s with FAKETIME="+60s".

/** libfaketime's thread-safe build (a node has worker threads), from Debian's faketime package; undefined without it. */
export function libfaketime (): string | undefined {
  let listed: string[] = []
  try { listed = execFileSync('dpkg', ['-L', 'faketime'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).split('\n') } catch {}
  return [...listed.filter((f) => f.endsWith('/libfaketimeMT.so.1')), '/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1', '/usr/lib/aarch64-linux-gnu/faketime/libfaketimeMT.so.1'].find((f) => existsSync(f))
}

/** Why clocks cannot be moved here, or undefined when they can. */
export function clockUnavailable (): string | undefined {
  return libfaketime() === undefined ? 'libfaketime is not installed (apt-get install faketime)' : undefined
}

/** FAKETIME's form of an offset: "+60s", "-1.5s". */
const offset = (seconds: number) => `${seconds < 0 ? '-' : '+'}${Math.abs(seconds)}s`

function preload (lib: string, env: Record<string, string | undefined>): string {
  return [lib, ...(env.LD_PRELOAD ?? '').split(/[\s:]+/).filter(Boolean)].join(':')
}

/** The environment that starts a process with its wall clock offsetSeconds off, fixed for its life. */
export function clockEnv (offsetSeconds: number, env: Record<string, string | undefined> = process.env): Record<string, string> {
  const lib = libfaketime()
  if (lib === undefined) throw new Error(clockUnavailable())
  return { LD_PRELOAD: preload(lib, env), FAKETIME: offset(offsetSeconds), FAKETIME_DONT_FAKE_MONOTONIC: '1' }
}

/** A clock that can be moved while the process runs: env starts it, move() steps it. */
export interface MovableClock {
  env: Record<string, string>
  /** Sets the offset from real time; the process sees it within a second (libfaketime reads the file once a second). */
  move (offsetSeconds: number): void
}

/**
 * A clock read from `file` (FAKETIME_TIMESTAMP_FILE), starting offsetSeconds off: a node started with env runs on
 * real time until moved, then steps, as a host clock corrected by NTP does.
 */
export function movableClock (file: string, offsetSeconds = 0, env: Record<string, string | undefined> = process.env): MovableClock {
  const lib = libfaketime()
  if (lib === undefined) throw new Error(clockUnavailable())
  const move = (seconds: number) => writeFileSync(file, `${offset(seconds)}\n`)
  move(offsetSeconds)
  return { env: { LD_PRELOAD: preload(lib, env), FAKETIME_TIMESTAMP_FILE: file, FAKETIME_CACHE_DURATION: '1', FAKETIME_DONT_FAKE_MONOTONIC: '1' }, move }
}
