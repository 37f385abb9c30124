import { isDeepStrictEqual } from 'node:util'
import type { Key } from 'lmdb'
import type { Store } from '../store/store.js'

/**
 * What a table's owner derives on this node from a row the engine delivered (the adslots order from a screen's rows),
 * called inside the applying transaction after the row is written, with the value it replaced (to undo what that
 * one derived: a removed subscription's place in its seat's list).
 */
export type AppliedHook = (table: string, key: Key, previous: unknown) => void

/**
 * Writes one row the cluster decided into this node's copy (value undefined: removed), inside a transaction and
 * ChangeLog.applying, and has what derives from it derived: false when this node does not replicate the table (a
 * newer node's). A row this node holds already is left as it is. The one way the state bucket's rows and the names'
 * log's commits (src/cluster/fenced-commits.ts) reach the tables.
 */
export function writeRow (store: Store, onApplied: AppliedHook, table: string, key: Key, value: unknown): boolean {
  const target = store.replicated(table)
  if (target === undefined) return false
  const previous = target.get(key)
  if (isDeepStrictEqual(previous, value)) return true
  if (value !== undefined) target.putSync(key, value)
  else target.removeSync(key)
  onApplied(table, key, previous)
  return true
}
