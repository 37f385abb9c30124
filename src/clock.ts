/**
 * The one source of time. TTLs, rate-limit windows, heartbeats and schedules read it, so tests move time instead of
 * sleeping (DESIGN principle 4).
 */
export interface Clock {
  /** Milliseconds since the Unix epoch. */
  now (): number
  /** How a hot thread rebuilds the same clock: a moved clock lives in shared memory, so every thread reads one time. */
  share? (): ClockShare
}

/** A clock as it crosses to a worker thread. */
export type ClockShare = { kind: 'system' } | { kind: 'manual' | 'running', buffer: SharedArrayBuffer }

/** Wall-clock time. */
export const systemClock: Clock = { now: () => Date.now(), share: () => ({ kind: 'system' }) }

/** A clock that moves only when told; for tests and simulations. Its reading is shared with the threads given share(). */
export class ManualClock implements Clock {
  protected readonly cell: Float64Array

  constructor (start = Date.UTC(2026, 0, 5, 12, 0, 0), buffer = new SharedArrayBuffer(8)) {
    this.cell = new Float64Array(buffer)
    if (!Number.isNaN(start)) this.set(start)
  }

  now (): number {
    return this.cell[0]!
  }

  /** Moves the clock forward by ms milliseconds. */
  advance (ms: number): void {
    this.cell[0]! += ms
  }

  /** Sets the clock to an absolute time. */
  set (ms: number): void {
    this.cell[0] = ms
  }

  share (): ClockShare {
    return { kind: 'manual', buffer: this.cell.buffer as SharedArrayBuffer }
  }
}

/** A clock that runs with real time (a browser on the other side keeps real time) and can still be moved ahead. */
export class RunningClock extends ManualClock {
  constructor (buffer?: SharedArrayBuffer) {
    super(NaN, buffer)
  }

  override now (): number { return Date.now() + this.cell[0]! }
  override advance (ms: number): void { this.cell[0]! += ms }
  override set (ms: number): void { this.cell[0] = ms - Date.now() }
  override share (): ClockShare { return { kind: 'running', buffer: this.cell.buffer as SharedArrayBuffer } }
}

/** The clock a share() describes, reading the same memory. */
export function clockOf (share: ClockShare): Clock {
  if (share.kind === 'system') return systemClock
  return share.kind === 'manual' ? new ManualClock(NaN, share.buffer) : new RunningClock(share.buffer)
}

/** ISO 8601 text of a clock reading. */
export function iso (ms: number): string {
  return new Date(ms).toISOString()
}
