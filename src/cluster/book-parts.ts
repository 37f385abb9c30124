import type { Change } from '../store/changes.js'
import { partitionOf } from './screen-partitions.js'
import { packValue, unpackValue } from './state-keys.js'

/**
 * The book's rows that every node applies, under this partition number: a seat's hourly counters (GET /stats sums
 * every node's rows, wherever it is asked).
 */
export const EVERY_NODE = -1

/** The most a message packs to: the engine refuses messages past 1 MB (max_payload). */
const MAX_MESSAGE_BYTES = 900 * 1024

/** Whose a book row is: a bid (keyed [screen_id, ...]) its screen's partition's, any other row every node's. */
function bookPartition (change: Change, partitions: number): number {
  return change[0] === 'bids' ? partitionOf((change[1] as [string])[0], partitions) : EVERY_NODE
}

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

/**
 * A round of book rows as messages of the book stream, each a list of [partition, packed rows]: every node receives
 * every message, and unpacks only the rows of the partitions it holds and of EVERY_NODE, so a node that neither took a
 * bid nor holds its screen's partition spends on it no more than reading past its bytes.
 */
export function packBook (rows: Iterable<Change>, partitions: number, maxBytes = MAX_MESSAGE_BYTES): Buffer[] {
  const messages: Buffer[] = []
  let bin: Array<[number, Buffer]> = []
  let size = 0
  for (const [p, group] of byPartition(rows, partitions)) {
    for (const part of packedParts(group, maxBytes)) {
      if (bin.length > 0 && size + part.length > maxBytes) {
        messages.push(packValue(bin))
        bin = []
        size = 0
      }
      bin.push([p, part])
      size += part.length + 16
    }
  }
  if (bin.length > 0) messages.push(packValue(bin))
  return messages
}

function byPartition (rows: Iterable<Change>, partitions: number): Map<number, Change[]> {
  const groups = new Map<number, Change[]>()
  for (const row of rows) {
    const p = bookPartition(row, partitions)
    const group = groups.get(p)
    if (group === undefined) groups.set(p, [row])
    else group.push(row)
  }
  return groups
}

/** A book message's rows of the partitions wanted (EVERY_NODE's always), the others left packed. */
export function bookRows (data: Uint8Array, partitions: number, wanted: (partition: number) => boolean, each: (partition: number, rows: Change[]) => void): void {
  const message = unpackValue(data) as Array<[number, Uint8Array]> | Change[]
  // A round of rows not grouped (shipped by a node of an earlier version, and kept in the stream since) is grouped here.
  if (message.length > 0 && typeof message[0]![0] === 'string') {
    for (const [p, rows] of byPartition(message as Change[], partitions)) if (p === EVERY_NODE || wanted(p)) each(p, rows)
    return
  }
  for (const [p, packed] of message as Array<[number, Uint8Array]>) {
    if (p === EVERY_NODE || wanted(p)) each(p, unpackValue(packed) as Change[])
  }
}
