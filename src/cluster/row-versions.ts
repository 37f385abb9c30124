import type { Store } from '../store/store.js'
import type { FencedRow, RowVersion } from './records.js'
import { Stamped, unpackEntry, type BucketStamp } from './state-keys.js'

// The rows a transaction under a record's lock writes that are not records (a screen under its partner's lock, the
// Idempotency-Key's outcome) travel through the names' log with it and reach the other nodes through the state bucket,
// copied there once the log has accepted it (fenced-commits.ts). A copy can land late: its writer paused between the
// log's verdict and the copy, woke, and copied what the lock's next holder has rewritten since. The state bucket keeps
// each row's last value, so that late copy would be every node's value. Each value carries a stamp, so that every
// node tells it for older wherever it lands.

/** A copy's stamp: twice the names' log's seq that accepted its transaction (even). */
export const copyStamp = (seq: number): number => 2 * seq

/**
 * Whether a value arriving in the state bucket is newer than the version this node holds of its row (undefined: none
 * held, or a plain value with no stamp):
 * - a plain write (no stamp, or an odd one) always: the state bucket's order decides between writes made straight to
 *   it, as it does for every other row;
 * - a copy only when the log accepted its transaction after everything the held value followed: a copy of an older
 *   transaction, or of the same one again (its writer woken late, once the lock's next holder had copied it), is not;
 * - a repair (a node putting its value back over a late copy) when its stamp, then the revision its value first landed
 *   at, is above the held one's.
 */
export function admits (held: RowVersion | undefined, arriving: BucketStamp | undefined): boolean {
  if (held === undefined || arriving === undefined) return true
  if (arriving.rev !== undefined) return arriving.stamp > held.stamp || (arriving.stamp === held.stamp && arriving.rev > held.rev)
  return arriving.stamp % 2 === 1 || arriving.stamp > held.stamp
}

/** Whether a value not admitted is the held one itself, put back (a repair that came back): nothing to put right. */
export function isHeld (held: RowVersion, arriving: BucketStamp | undefined): boolean {
  return arriving?.rev !== undefined && arriving.stamp === held.stamp && arriving.rev === held.rev
}

const rowOf = (value: unknown): FencedRow => value === undefined ? { removed: true } : { value }
const valueOf = (row: FencedRow): unknown => 'value' in row ? row.value : undefined

/**
 * This node's versions of the rows that come stamped (row_versions): what the applier writes of a state bucket value,
 * what a plain write of one of them carries, and what a node puts back over a late copy.
 */
export class RowVersions {
  readonly #store: Store

  constructor (store: Store) {
    this.#store = store
  }

  /**
   * A state bucket value at its revision, inside the applier's write: its row's value when it is newer than this
   * node's (the version moves to it, whether or not the applier then writes it: this node's own change to the row,
   * waiting to ship, comes later and wins), or 'older'.
   */
  admit (kvKey: string, bytes: Uint8Array | undefined, revision: number): { value: unknown } | 'older' | 'held' {
    const { value, at } = bytes === undefined ? { value: undefined } : unpackEntry(bytes)
    const held = this.#store.rowVersions.get(kvKey)
    if (held !== undefined && !admits(held, at)) return isHeld(held, at) ? 'held' : 'older'
    if (at !== undefined || held !== undefined) {
      const stamp = at === undefined ? held!.stamp : at.rev !== undefined || at.stamp % 2 === 0 ? at.stamp : Math.max(at.stamp, held?.stamp ?? -1)
      this.#store.rowVersions.putSync(kvKey, { stamp, rev: at?.rev ?? revision, ...rowOf(value) })
    }
    return { value }
  }

  /**
   * Whether the state bucket's last value of a row (bytes, at its revision) is older than this node's, so that this
   * node's must go back on top: undefined when it need not, else this node's value as a repair.
   */
  repairOver (kvKey: string, last: { bytes: Uint8Array | undefined, revision: number } | undefined): Stamped | undefined {
    const held = this.#store.rowVersions.get(kvKey)
    if (held === undefined) return undefined
    if (last !== undefined) {
      const at = last.bytes === undefined || last.bytes.length === 0 ? undefined : unpackEntry(last.bytes).at
      if (admits(held, at) || isHeld(held, at)) return undefined
    }
    return new Stamped({ stamp: held.stamp, rev: held.rev }, valueOf(held))
  }

  /**
   * A plain write of a row, as this node sends it to the state bucket: stamped just above the version it holds (odd:
   * newer than the copy it followed, older than any copy the log accepts later), or plain, for a row with none.
   */
  outgoing (kvKey: string, value: unknown): unknown {
    const held = this.#store.rowVersions.get(kvKey)
    return held === undefined ? value : new Stamped({ stamp: held.stamp | 1 }, value)
  }

  /** The newest value of a row this node has had from the state bucket stamped, if any: what a refused write goes back to. */
  held (kvKey: string): { value: unknown } | undefined {
    const held = this.#store.rowVersions.get(kvKey)
    return held === undefined ? undefined : { value: valueOf(held) }
  }

  /** A copy of a row the log accepted at seq. */
  static copy (seq: number, row: FencedRow): Stamped {
    return new Stamped({ stamp: copyStamp(seq) }, valueOf(row))
  }
}
