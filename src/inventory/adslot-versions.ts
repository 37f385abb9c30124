// The adslots order as it stood at any version a walk started from (issue 26). FEIN signals move screens through the
// order every few seconds, so a cursor that is only "the last key" skips screens that rise behind it and repeats
// those that fall ahead of it. Instead each transaction that changes index keys bumps one version counter; an index
// entry records the version it has been held since (the tuple's last element), and the key a screen leaves is kept
// with the versions it held while a walk may still read it. A walk started at version v reads the current entries
// held since v or earlier, merged in order with the kept keys that were current at v. Each screen has exactly one
// key at any version, so a walk lists each screen of its listing once.
import type { Store } from '../store/store.js'
import type { IndexKey, IndexTuple, PastKey } from './records.js'

const VERSION = 'adslots:version'

/** The version of the adslots order that the reader's snapshot holds. */
export function currentVersion (store: Store): number {
  return (store.meta.get(VERSION) as number | undefined) ?? 0
}

/** Per store, the version its running transaction's moves take: one bump per transaction, whatever it moves. */
const taken = new WeakMap<Store, { transaction: number, version: number }>()

/**
 * Records that a screen's index key changes, from `from` (held since version `since`; absent when the screen enters
 * the order), and returns the version its next key (if any) holds from. The key it left stays readable for walks
 * started while it was current. Call inside Store.write.
 */
export function recordMove (store: Store, screenId: string, from: IndexKey | undefined, since: number, now: number): number {
  const memo = taken.get(store)
  let version = memo?.transaction === store.transaction ? memo.version : undefined
  if (version === undefined) {
    version = currentVersion(store) + 1
    store.meta.putSync(VERSION, version)
    taken.set(store, { transaction: store.transaction, version })
  }
  // A key held only within this transaction was never current for any walk.
  if (from !== undefined && since < version) {
    const past: PastKey = [...from, since]
    store.adslotPast.putSync(past, version)
    store.adslotPastEnds.putSync([version, screenId], [past, now])
  }
  return version
}

/** Orders index keys (the since part of a past key is not compared). */
export function compareKeys (a: IndexKey | PastKey, b: IndexKey | PastKey): number {
  for (let i = 0; i < 4; i++) {
    if (a[i]! < b[i]!) return -1
    if (a[i]! > b[i]!) return 1
  }
  return 0
}

/** An entry of the order as it stood at a version: its key then, and its current entry when that is the same one. */
export interface EntryAt {
  at: IndexKey
  /** The current index value, when the entry is current (a kept key's screen is looked up by the caller). */
  tuple?: IndexTuple
}

/**
 * The order as it stood at `version` within a key range, in order: current entries whose screen has held its key
 * since `version` or earlier, merged with the kept keys that were current at `version`.
 */
export function * entriesAt (store: Store, version: number, range: { start: unknown[], end: unknown[], exclusiveStart?: boolean }): Generator<EntryAt> {
  // Both tables are read in one key order, one raw entry at a time, so a page reads only the entries within the keys
  // it lists, never ahead to find a valid one (after a burst of moves most current entries are too new for a walk).
  const current = store.adslotIndex.getRange(range as never)[Symbol.iterator]()
  const past = store.adslotPast.getRange(range as never)[Symbol.iterator]()
  try {
    let a = current.next()
    let b = past.next()
    while (a.done !== true || b.done !== true) {
      if (b.done === true || (a.done !== true && compareKeys(a.value.key as IndexKey, b.value.key as PastKey) < 0)) {
        const key = a.value.key as IndexKey
        const tuple = a.value.value
        a = current.next()
        if ((tuple[12] ?? 0) <= version) yield { at: key, tuple }
      } else {
        const key = b.value.key as PastKey
        const until = b.value.value
        b = past.next()
        // An exclusive start excludes the past keys that share its four parts too (they follow it in key order).
        if (range.exclusiveStart === true && compareKeys(key, range.start as IndexKey) === 0) continue
        if (key[4] <= version && version < until) yield { at: key.slice(0, 4) as IndexKey }
      }
    }
  } finally {
    // A page that ends before the range does leaves both cursors open; each holds its read transaction, and so a
    // slot of LMDB's reader table, past every later snapshot. A few hundred walked pages filled the table
    // (MDB_READERS_FULL ended the hot thread: bench/spots with the demo market moving screens).
    current.return?.()
    past.return?.()
  }
}

/** Marks a walk as read now: the keys it needs are kept while it is. Call inside Store.write. */
export function touchWalk (store: Store, version: number, now: number): void {
  store.adslotWalks.putSync(version, now)
}

/** A walk's last read is recorded once per this share of a cursor's life (the rest of its pages write nothing). */
const TOUCH_SHARE = 1 / 4

/** Whether a page of a walk from this version should record its read now (touchWalk). */
export function walkTouchDue (store: Store, version: number, now: number, cursorTtlMs: number): boolean {
  return (store.adslotWalks.get(version) ?? 0) < now - cursorTtlMs * TOUCH_SHARE
}

/**
 * How long kept keys and walk records outlive their last use: a cursor's life, the share by which a walk's recorded
 * read may lag its last page, and a minute for clocks and the job's pace.
 */
export function keepWindow (cursorTtlMs: number): number {
  return cursorTtlMs * (1 + TOUCH_SHARE) + 60_000
}

/** Whether some kept key stopped being current longer than `keepMs` ago: collectPast may have work. */
export function pastDue (store: Store, now: number, keepMs: number): boolean {
  for (const { value } of store.adslotPastEnds.getRange({ limit: 1 })) return value[1] < now - keepMs
  return false
}

/**
 * Drops the kept keys no walk can still read: those that stopped being current before the oldest walk read within
 * `keepMs` started, and longer than `keepMs` ago (a first page served since may not have been followed yet). At most
 * `max` at a time, oldest first. Call inside Store.write; returns how many it dropped.
 */
export function collectPast (store: Store, now: number, keepMs: number, max = 10_000): number {
  // Read, then delete: removing entries under an open range read of the same table is not something to lean on.
  const walks = [...store.adslotWalks.getRange()]
  let oldest = Infinity
  for (const { key, value } of walks) {
    if (value < now - keepMs) store.adslotWalks.removeSync(key)
    else oldest = Math.min(oldest, key)
  }
  const due: Array<{ key: [number, string], past: PastKey }> = []
  for (const { key, value: [past, movedAt] } of store.adslotPastEnds.getRange({ limit: max })) {
    if (key[0] > oldest || movedAt >= now - keepMs) break
    due.push({ key, past })
  }
  for (const { key, past } of due) {
    store.adslotPast.removeSync(past)
    store.adslotPastEnds.removeSync(key)
  }
  return due.length
}
