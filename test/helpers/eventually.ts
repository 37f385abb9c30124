import { inspect } from 'node:util'

/** What eventually needs of a tap test: a way to fail it. */
export interface Fails {
  fail (message: string): unknown
}

export interface EventuallyOptions<T> {
  /** How long to wait, in milliseconds of real time (default 10 s). Generous: a busy CI machine is slow, not broken. */
  within?: number
  /** The pause between two checks, in milliseconds (default 50). */
  every?: number
  /** Whether what check answered is what was waited for (default: any answer but undefined, null and false). */
  until?: (seen: T) => boolean
  /** At most this many checks, for a check that spends something (an onboarding counts against a 5-an-hour limit). */
  tries?: number
}

const settled = (seen: unknown) => seen !== undefined && seen !== null && seen !== false

/**
 * Asks check again and again until its answer is what `until` accepts, and answers that. Past `within`, the test
 * fails with what it waited for and the last answer it saw (or the error check threw last), and that last answer is
 * returned, so that the assertions after it still report what is there. A check (or until) that throws counts as not
 * yet: a node that is restarting refuses connections.
 */
export async function eventually<T> (t: Fails, what: string, check: () => T | Promise<T>, options: EventuallyOptions<T> = {}): Promise<T> {
  const within = options.within ?? 10_000
  const until = options.until ?? settled
  const deadline = performance.now() + within
  let last: { seen: T } | { error: unknown } | undefined
  let checks = 0
  for (;;) {
    checks++
    try {
      const seen = await check()
      last = { seen }
      if (until(seen)) return seen
    } catch (error) {
      last = { error }
    }
    if (performance.now() >= deadline || checks === options.tries) break
    await pause(Math.min(options.every ?? 50, Math.max(0, deadline - performance.now())))
  }
  const saw = last === undefined ? 'nothing' : 'error' in last ? `an error: ${last.error instanceof Error ? last.error.message : inspect(last.error)}` : inspect(last.seen, { depth: 4, breakLength: Infinity })
  t.fail(`${what}: not within ${within / 1000} s (${checks} ${checks === 1 ? 'check' : 'checks'}); last saw ${saw}`)
  return last !== undefined && 'seen' in last ? last.seen : undefined as T
}

/**
 * Lets real time pass: for a test that must give something the chance to happen (a load that runs for a while, a
 * message that must not arrive). A test that waits for something to happen uses eventually.
 */
export function pause (ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms))
}
