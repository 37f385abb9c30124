import { SharedTable } from '../../http/shared-table.js'

/**
 * A power of two. A claim lives from a decision until its turn's writes commit, so a thread holds at most a turn's
 * decisions (512); a full probe window of 32 live claims, the only way one could be taken over, is then out of reach.
 */
const SLOTS = 1 << 16
/**
 * Each slot: when it was taken (ms, for the table's takeover order), the thread that holds it (0: released), and
 * whether a bid on the screen may have been replaced under the decision holding it (1).
 */
const WIDTH = 3
const OWNER = 1
const CHANGED = 2
/** In the shared counters: claims released so far, and bid intakes being applied now (in a write transaction). */
const RELEASED = 0
const INTAKES = 1

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
  /** Claims released, counted (a waiting thread sleeps on it), and intakes being applied. */
  readonly counters: SharedArrayBuffer
  readonly #table: SharedTable
  readonly #counters: Int32Array
  readonly #thread: number

  /** thread: 0 for the supervisor, 1..HOT_THREADS; shared: another thread's claims (buffer and counters) to share. */
  constructor (thread: number, shared?: { buffer: SharedArrayBuffer, counters: SharedArrayBuffer }) {
    this.#thread = thread
    this.#table = new SharedTable(SLOTS, WIDTH, shared?.buffer)
    this.buffer = this.#table.buffer
    this.counters = shared?.counters ?? new SharedArrayBuffer(8)
    this.#counters = new Int32Array(this.counters)
  }

  take (screenId: string): Held {
    const me = this.#thread
    return this.#table.with(screenId, free, (values, base, fresh) => {
      if (!fresh) return values[base + OWNER] === me ? 'mine' : 'other'
      values[base] = Date.now()
      values[base + OWNER] = me
      values[base + CHANGED] = 0
      return 'taken'
    })
  }

  /** Releases this thread's claim on the screen (a claim another thread holds now is left alone). */
  release (screenId: string): void {
    const me = this.#thread
    const released = this.#held(screenId, false, (values, base) => {
      if (values[base + OWNER] !== me) return false
      values[base + OWNER] = 0
      return true
    })
    if (released) this.#wake()
  }

  /**
   * Notes on the screen's claim, if it is held, that a bid on it may have been replaced: a seat's new bid on an imp
   * takes the old one's key, and the decision holding the claim may have taken the old one (applySettlements then
   * reads back what it takes).
   */
  mark (screenId: string): void {
    this.#held(screenId, undefined, (values, base) => { values[base + CHANGED] = 1 })
  }

  /** Whether the screen's claim was marked while held. */
  changed (screenId: string): boolean {
    return this.#held(screenId, false, (values, base) => values[base + CHANGED] === 1)
  }

  /**
   * A transaction is applying bid intakes (until it ends): it marks the claims of the screens it stores bids on, and
   * a decision that claims a screen meanwhile marks its own claim, since the intake checked before the claim existed
   * and may commit after the decision's snapshot. Call inside the transaction, before its first mark.
   */
  intakeBegins (): void {
    Atomics.add(this.#counters, INTAKES, 1)
  }

  intakeEnds (): void {
    Atomics.sub(this.#counters, INTAKES, 1)
  }

  /** Whether a transaction applying bid intakes is under way. */
  get intakeUnderway (): boolean {
    return Atomics.load(this.#counters, INTAKES) !== 0
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
    return Atomics.load(this.#counters, RELEASED)
  }

  /** Sleeps until a claim is released after `since` (released, read before the take that found the claim held) or the deadline (performance.now() ms); false at the deadline. */
  wait (since: number, deadline: number): boolean {
    const left = deadline - performance.now()
    if (left <= 0) return false
    Atomics.wait(this.#counters, RELEASED, since, left)
    return true
  }

  /**
   * Runs fn on the screen's live claim, whoever holds it, or answers none: the slot the table set up for a claim
   * that did not exist is given back as it was found.
   */
  #held<T> (screenId: string, none: T, fn: (values: Float64Array, base: number) => T): T {
    return this.#table.with(screenId, free, (values, base, fresh) => {
      if (!fresh) return fn(values, base)
      values[base + OWNER] = 0
      return none
    })
  }

  #wake (): void {
    Atomics.add(this.#counters, RELEASED, 1)
    Atomics.notify(this.#counters, RELEASED)
  }
}

const free = (values: Float64Array, base: number) => values[base + OWNER] === 0
