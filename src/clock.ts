/**
 * The one source of time. TTLs, rate-limit windows, heartbeats and schedules read it, so tests move time instead of
 * sleeping (DESIGN principle 4).
 */
export interface Clock {
  /** Milliseconds since the Unix epoch. */
  now (): number
}

/** Wall-clock time. */
export const systemClock: Clock = { now: () => Date.now() }

/** A clock that moves only when told; for tests and simulations. */
export class ManualClock implements Clock {
  #now: number

  constructor (start = Date.UTC(2026, 0, 5, 12, 0, 0)) {
    this.#now = start
  }

  now (): number {
    return this.#now
  }

  /** Moves the clock forward by ms milliseconds. */
  advance (ms: number): void {
    this.#now += ms
  }

  /** Sets the clock to an absolute time. */
  set (ms: number): void {
    this.#now = ms
  }
}

/** ISO 8601 text of a clock reading. */
export function iso (ms: number): string {
  return new Date(ms).toISOString()
}
