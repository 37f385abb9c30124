import { SharedTable } from '../../http/shared-table.js'

/**
 * A power of two. A claim lives from a decision until its turn's writes commit, so a thread holds at most a turn's
 * decisions (512); a full probe window of 32 live claims, the only way one could be taken over, is then out of reach.
 */
const SLOTS = 1 << 16
/** Each slot: when it was taken (ms, for the table's takeover order) and the thread that holds it (0: released). */
const WIDTH = 2
const OWNER = 1

/** What take() found: the claim is now this thread's, this thread already held it, or another thread holds it. */
export type Held = 'taken' | 'mine' | 'other'

/**
 * One spot decision per screen at a time, across hot threads (docs/architecture.md, "The waterfall"). A decision
 * settles every stored bid on its screen and counts a line's play, which the screen's next decision must see; its
 * writes reach LMDB with the rest of its thread's turn (the hot-thread journal). So a thread claims the screen before
 * deciding and holds the claim until those writes commit; another thread's decision on the screen waits for them,
 * then reads a fresh snapshot. Waiting threads hold no claim (they apply their own journal first), so no two threads
 * wait on each other. Thread 0 is the supervisor (the expiry job). The claims live in shared memory: a replaced hot
 * thread releases its predecessor's once it has replayed that thread's journal.
 */
export class ScreenClaims {
  readonly buffer: SharedArrayBuffer
  /** Released claims, counted: a waiting thread sleeps on it. */
  readonly releases: SharedArrayBuffer
  readonly #table: SharedTable
  readonly #released: Int32Array
  readonly #thread: number

  /** thread: 0 for the supervisor, 1..HOT_THREADS; shared: another thread's claims (buffer and releases) to share. */
  constructor (thread: number, shared?: { buffer: SharedArrayBuffer, releases: SharedArrayBuffer }) {
    this.#thread = thread
    this.#table = new SharedTable(SLOTS, WIDTH, shared?.buffer)
    this.buffer = this.#table.buffer
    this.releases = shared?.releases ?? new SharedArrayBuffer(4)
    this.#released = new Int32Array(this.releases)
  }

  take (screenId: string): Held {
    const me = this.#thread
    return this.#table.with(screenId, free, (values, base, fresh) => {
      if (!fresh) return values[base + OWNER] === me ? 'mine' : 'other'
      values[base] = Date.now()
      values[base + OWNER] = me
      return 'taken'
    })
  }

  /** Releases this thread's claim on the screen (a claim another thread holds now is left alone). */
  release (screenId: string): void {
    const me = this.#thread
    const released = this.#table.with(screenId, free, (values, base, fresh) => {
      if (fresh || values[base + OWNER] !== me) {
        // fresh: no live claim, and the slot just set up for one is given back as it was found.
        if (fresh) values[base + OWNER] = 0
        return false
      }
      values[base + OWNER] = 0
      return true
    })
    if (released) this.#wake()
  }

  /** Releases every claim a thread holds: a hot thread that died, once its journal is replayed. */
  releaseAll (thread: number): void {
    let any = false
    this.#table.each((values, base) => {
      if (values[base + OWNER] !== thread) return
      values[base + OWNER] = 0
      any = true
    })
    if (any) this.#wake()
  }

  /** How many claims were released so far: what wait() compares with. */
  get released (): number {
    return Atomics.load(this.#released, 0)
  }

  /** Sleeps until a claim is released after `since` (released, read before the take that found the claim held) or the deadline (performance.now() ms); false at the deadline. */
  wait (since: number, deadline: number): boolean {
    const left = deadline - performance.now()
    if (left <= 0) return false
    Atomics.wait(this.#released, 0, since, left)
    return true
  }

  #wake (): void {
    Atomics.add(this.#released, 0, 1)
    Atomics.notify(this.#released, 0)
  }
}

const free = (values: Float64Array, base: number) => values[base + OWNER] === 0
