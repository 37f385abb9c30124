/** How long opening a consumer or a watch may take before it is given up on and opened again. */
export const OPEN_WAIT_MS = 10_000

/**
 * A follower's opens of its consumer (a log's, a followed stream's) or its watch, of which the last is the one to
 * follow. Opening can wait without end (nats.js, after an engine member was killed: one node's names' log stayed at its
 * first entry for over a minute while the others applied 160 entries, and a watchdog that watched only what was open
 * never saw it): the watchdog gives up on an open past OPEN_WAIT_MS and starts another, and an open given up on is
 * stopped when it opens after all.
 */
export class Opens {
  #count = 0
  #since: number | undefined

  /** Starts an open; the answer says, once it has opened, whether it is still the last (not given up on). */
  begin (): () => boolean {
    const n = ++this.#count
    this.#since = performance.now()
    return () => n === this.#count
  }

  /** The last open has opened. */
  opened (): void {
    this.#since = undefined
  }

  /** Whether an open is under way. */
  get pending (): boolean {
    return this.#since !== undefined
  }

  /** Gives up on any open under way (a restore follows: the open after it is the one to follow). */
  abandon (): void {
    this.#count++
    this.#since = undefined
  }

  /** True, once, when the open under way has taken longer than OPEN_WAIT_MS: it is given up on, to be opened again. */
  overdue (): boolean {
    if (this.#since === undefined || performance.now() - this.#since <= OPEN_WAIT_MS) return false
    this.#since = undefined
    return true
  }
}
