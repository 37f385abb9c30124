import { partitionOf } from './screen-partitions.js'

/**
 * The partitions of the screens whose spots this node decides now: it owns their logs and holds all their bids
 * (src/cluster/applier.ts, hold). In memory the supervisor and the hot threads share: the supervisor sets a partition
 * once its bids are read, and every thread reads it on each player request and each expired bid.
 */
export class ServedPartitions {
  readonly buffer: SharedArrayBuffer
  readonly partitions: number
  readonly #flags: Int32Array

  /** buffer: the supervisor's, to share. */
  constructor (partitions: number, buffer = new SharedArrayBuffer(4 * partitions)) {
    this.buffer = buffer
    this.partitions = partitions
    this.#flags = new Int32Array(buffer)
  }

  serves (partition: number): boolean {
    return Atomics.load(this.#flags, partition) === 1
  }

  servesScreen (screenId: string): boolean {
    return this.serves(partitionOf(screenId, this.partitions))
  }

  set (partition: number, serving: boolean): void {
    Atomics.store(this.#flags, partition, serving ? 1 : 0)
  }
}
