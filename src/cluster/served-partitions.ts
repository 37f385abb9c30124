import { partitionOf } from './screen-partitions.js'

/** Milliseconds on the monotonic clock every thread of the process reads alike (not the wall clock, which may step). */
export function monotonicMs (): number {
  return Number(process.hrtime.bigint() / 1_000_000n)
}

/**
 * The partitions of the screens whose spots this node decides now, each until when (monotonicMs): it owns their logs,
 * holds all their bids (src/cluster/applier.ts, hold), and its lease of each, renewed by its beats, has not run out
 * (PartitionOwners.leaseUntil). In memory the supervisor and the hot threads share: the supervisor sets a partition's
 * time every quarter second, and every thread reads it on each player request and each expired bid, so a node woken
 * from a pause decides nothing on a lapsed lease before its supervisor has caught up.
 */
export class ServedPartitions {
  readonly buffer: SharedArrayBuffer
  readonly partitions: number
  /** Per partition: until when it is served, and whether this node owns its log (1) or not (0). */
  readonly #state: BigInt64Array

  /** buffer: the supervisor's, to share. */
  constructor (partitions: number, buffer = new SharedArrayBuffer(16 * partitions)) {
    this.buffer = buffer
    this.partitions = partitions
    this.#state = new BigInt64Array(buffer)
  }

  serves (partition: number): boolean {
    return Number(Atomics.load(this.#state, 2 * partition)) > monotonicMs()
  }

  /**
   * What this node does with an expired bid on the screen: settles it while it serves the screen's partition, leaves
   * it for later while it owns the partition without serving it yet (reading its bids, or its lease to renew), and
   * drops its own copy of a partition another node owns.
   */
  expiry (screenId: string): 'settle' | 'later' | 'drop' {
    const partition = partitionOf(screenId, this.partitions)
    if (this.serves(partition)) return 'settle'
    return Atomics.load(this.#state, 2 * partition + 1) === 1n ? 'later' : 'drop'
  }

  /** Serves the partition until then (monotonicMs), or not at all (0); owned: whether this node owns its log. */
  set (partition: number, until: number, owned: boolean): void {
    Atomics.store(this.#state, 2 * partition + 1, owned ? 1n : 0n)
    Atomics.store(this.#state, 2 * partition, BigInt(Math.floor(until)))
  }
}
