import type { CreativeRecord } from './records.js'
import type { Store } from '../store/store.js'

/** The newest version of a creative: what a sync compares a new asset with, and what list_creatives shows. */
export function newestVersion (store: Store, c: CreativeRecord): CreativeRecord {
  let v = c
  for (let next = v.next_version; next !== undefined; next = v.next_version) {
    const n = store.creatives.get(next)
    if (n === undefined) break
    v = n
  }
  return v
}

/**
 * The version a placement or bid naming a creative plays: the newest approved from it on, so that an approved
 * version keeps playing while its successor is moderated (or after the successor is rejected); the newest when none
 * is approved, so that its status says why it cannot play.
 */
export function playingVersion (store: Store, c: CreativeRecord): CreativeRecord {
  if (c.next_version === undefined) return c
  let approved = c.status === 'approved' ? c : undefined
  let v = c
  for (let next = v.next_version; next !== undefined; next = v.next_version) {
    const n = store.creatives.get(next)
    if (n === undefined) break
    v = n
    if (v.status === 'approved') approved = v
  }
  return approved ?? v
}
