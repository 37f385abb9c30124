import type { CreativeRecord } from './records.js'
import type { Store } from '../store/store.js'

/** A creative and the versions that follow it, oldest first. */
function * versionsFrom (store: Store, c: CreativeRecord): Generator<CreativeRecord> {
  yield c
  for (let next = c.next_version; next !== undefined;) {
    const v = store.creatives.get(next)
    if (v === undefined) return
    yield v
    next = v.next_version
  }
}

/** The newest version of a creative: what a sync compares a new asset with, and what list_creatives shows. */
export function newestVersion (store: Store, c: CreativeRecord): CreativeRecord {
  let newest = c
  for (const v of versionsFrom(store, c)) newest = v
  return newest
}

/**
 * The version a placement or bid naming a creative plays: the newest approved from it on, so that an approved
 * version keeps playing while its successor is moderated (or after the successor is rejected); the newest when none
 * is approved, so that its status says why it cannot play. A creative never re-synced is its own, with no walk.
 */
export function playingVersion (store: Store, c: CreativeRecord): CreativeRecord {
  if (c.next_version === undefined) return c
  let newest = c
  let approved: CreativeRecord | undefined
  for (const v of versionsFrom(store, c)) {
    newest = v
    if (v.status === 'approved') approved = v
  }
  return approved ?? newest
}
