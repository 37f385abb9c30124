import type { Change } from '../store/changes.js'
import { BOOK_SUBJECT } from './engine.js'
import { partitionOf } from './screen-partitions.js'
import { packValue } from './state-keys.js'

/** The most a message packs to: the engine refuses messages past 1 MB (max_payload). */
const MAX_MESSAGE_BYTES = 900 * 1024

/**
 * Rows packed into parts under maxBytes (none for no rows): a round of a busy node's bids, or of a fleet's FEIN, can
 * pack to megabytes. A round's rows have distinct keys, so its parts apply in any order.
 */
export function packedParts (rows: Change[], maxBytes = MAX_MESSAGE_BYTES): Buffer[] {
  if (rows.length === 0) return []
  const packed = packValue(rows)
  if (packed.length <= maxBytes || rows.length === 1) return [packed]
  const half = rows.length >> 1
  return [...packedParts(rows.slice(0, half), maxBytes), ...packedParts(rows.slice(half), maxBytes)]
}

/** The subject a partition's bids travel on, one per shipping node: `<BOOK_SUBJECT>.<partition>.<node>`. */
export function bookSubject (partition: number, node: string): string {
  return `${BOOK_SUBJECT}.${partition}.${node}`
}

/** What a node that holds a partition follows: every node's messages of that partition's bids, and nothing else. */
export function partitionFilter (partition: number): string {
  return `${BOOK_SUBJECT}.${partition}.*`
}

/**
 * A round's bids as messages of the book stream, a partition's bids on that partition's subject: a node consumes the
 * subjects of the partitions it holds only (src/cluster/applier.ts), so a bid costs a node that neither took it nor
 * holds its screen's partition nothing at all. A bid row is keyed [screen_id, ...]; any other book row (a seat's
 * counters) goes to the state bucket instead (src/cluster/shipper.ts).
 */
export function bookMessages (bids: Iterable<Change>, partitions: number, maxBytes = MAX_MESSAGE_BYTES): Array<{ partition: number, data: Buffer }> {
  const groups = new Map<number, Change[]>()
  for (const row of bids) {
    const p = partitionOf((row[1] as [string])[0], partitions)
    const group = groups.get(p)
    if (group === undefined) groups.set(p, [row])
    else group.push(row)
  }
  return [...groups].flatMap(([partition, rows]) => packedParts(rows, maxBytes).map((data) => ({ partition, data })))
}
