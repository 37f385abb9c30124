import { MarkWaiters } from './mark-waiters.js'

/**
 * How far this node's changes to replicated state have been shipped to the cluster's engine. The supervisor ships
 * (src/cluster/shipper.ts) and advances the mark, in memory its hot threads share, then wakes them; a request that
 * changed such state answers once its changes are shipped, so an acknowledged write is held by a quorum of the
 * engine, not only by this node's disk. A thread started later (a restart) reads the mark as it stands.
 */
export class ShippedChanges {
  readonly buffer: SharedArrayBuffer
  readonly #through: BigInt64Array
  readonly #waiters = new MarkWaiters()

  constructor (buffer = new SharedArrayBuffer(8)) {
    this.buffer = buffer
    this.#through = new BigInt64Array(buffer)
  }

  get through (): number {
    return Number(Atomics.load(this.#through, 0))
  }

  /** The supervisor: everything through seq is held by the engine (it ships in commit order). */
  advance (through: number): void {
    if (through > this.through) Atomics.store(this.#through, 0, BigInt(through))
    this.woken()
  }

  /** A hot thread, told the mark moved: answers the requests it now covers. */
  woken (): void {
    this.#waiters.reached(this.through)
  }

  /** Resolves true once seq is shipped, false when timeoutMs passes first. */
  wait (seq: number, timeoutMs: number): Promise<boolean> {
    return seq <= this.through ? Promise.resolve(true) : this.#waiters.wait(seq, timeoutMs)
  }
}
