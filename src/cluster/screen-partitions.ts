import { fnv } from '../http/shared-table.js'

/**
 * Which partition of the screens a screen falls in, of `partitions` (1 on a node alone): the log its bookings are
 * decided in, and the owner that holds its bids and decides its spots (docs/architecture.md, "Screens owned by
 * partitions").
 */
export function partitionOf (screenId: string, partitions: number): number {
  return partitions === 1 ? 0 : (fnv(screenId, 0x811c9dc5) >>> 0) % partitions
}
