// Benchmark: what the versioned adslots order costs (issue 26), in-process over an LMDB environment opened with the
// service's options, at BENCH_SCREENS screens (default 1,000,000):
// - a move: the index writes every move makes anyway (the old key out, the new one in, the position), against the
//   same with its version recorded (recordMove), in CPU per move, 100 moves a transaction as an audience batch commits;
//   the unversioned moves read and keep the since an entry holds too, so the difference is recordMove's alone;
// - a kept past key: bytes in adslot_past and adslot_past_ends per key, from LMDB's page counts;
// - a page of 200 rows: at the current version (every first page), and at versions that half and all of the screens
//   have moved since (a walk's later page after a burst of FEIN), through the same matches() the route calls.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { keyPart } from '../src/inventory/adslot-index.js'
import { currentVersion, recordMove } from '../src/inventory/adslot-versions.js'
import { page, type Plan } from '../src/inventory/adslots/query.js'
import type { IndexKey, IndexTuple } from '../src/inventory/records.js'
import { openStore, type Store } from '../src/store/store.js'
import { saveTable } from './lib/report.js'

const screens = Number(process.env.BENCH_SCREENS ?? 1_000_000)
const BATCH = 100
const tupleSince = (since: number): IndexTuple => ['gym', 'US', 'TX', 'austin', 0, 1, 0, 2, 0, 0, 5, 1, since]
const idOf = (i: number) => 'scr_' + i.toString(16).padStart(20, '0')
const randomKey = (i: number): IndexKey => [0, 1, keyPart(-Math.round(Math.random() * 30_000) / 100), idOf(i)]

const dir = mkdtempSync(join(tmpdir(), 'oohbid-walks-'))
const store = openStore(dir)

function cpuUs (fn: () => void): number {
  const before = process.cpuUsage()
  fn()
  const used = process.cpuUsage(before)
  return used.user + used.system
}

/** Moves the screens in `ids` to new keys, BATCH a transaction; `versioned` records each move as the service does. */
function move (s: Store, ids: number[], versioned: boolean): number {
  return cpuUs(() => {
    for (let b = 0; b < ids.length; b += BATCH) {
      s.write(() => {
        for (const i of ids.slice(b, b + BATCH)) {
          const id = idOf(i)
          const from = s.adslotPos.get(id)!
          const to = randomKey(i)
          const held = s.adslotIndex.get(from)![12] ?? 0
          s.adslotIndex.removeSync(from)
          const since = versioned ? recordMove(s, id, from, held, Date.now()) : held
          s.adslotIndex.putSync(to, tupleSince(since))
          s.adslotPos.putSync(id, to)
        }
      })
    }
  }) / ids.length
}

/** µs of CPU for a page of 200 at a version, averaged over rounds. */
function pageUs (version: number, rounds = 200): { us: number, rows: number } {
  const plan: Plan = { sources: ['owned'], tuple: {}, refined: false }
  let rows = 0
  const us = cpuUs(() => { for (let r = 0; r < rounds; r++) rows = page(store, plan, Date.now(), 200, { version }).entries.length }) / rounds
  return { us: Math.round(us), rows }
}

const bytesOf = (db: { getStats (): unknown }) => {
  const s = db.getStats() as { pageSize: number, treeBranchPageCount: number, treeLeafPageCount: number, overflowPages: number, entryCount: number }
  return { bytes: s.pageSize * (s.treeBranchPageCount + s.treeLeafPageCount + s.overflowPages), entries: s.entryCount }
}

console.log(`seeding ${screens.toLocaleString('en-US')} screens`)
for (let b = 0; b < screens; b += 10_000) {
  store.write(() => {
    for (let i = b; i < Math.min(screens, b + 10_000); i++) {
      const key = randomKey(i)
      store.adslotIndex.putSync(key, tupleSince(0))
      store.adslotPos.putSync(idOf(i), key)
    }
  })
}
const sample = Math.min(screens, 200_000)
const shuffled = Array.from({ length: screens }, (_, i) => i).sort(() => Math.random() - 0.5)
const plainUs = move(store, shuffled.slice(0, sample), false)
const versionedUs = move(store, shuffled.slice(sample, 2 * sample > screens ? screens : 2 * sample), true)
console.log(`move: ${plainUs.toFixed(1)} us unversioned, ${versionedUs.toFixed(1)} us versioned`)

const v0 = currentVersion(store)
const first = pageUs(v0)
// Every screen moves once more: half, then the other half.
move(store, shuffled.slice(0, screens / 2), true)
const vHalf = currentVersion(store)
move(store, shuffled.slice(screens / 2), true)
const half = pageUs(vHalf)
const all = pageUs(v0)
const current = pageUs(currentVersion(store))
const past = bytesOf(store.adslotPast)
const ends = bytesOf(store.adslotPastEnds)
const perKey = (past.bytes + ends.bytes) / past.entries
console.log(`pages of 200: ${first.us} us at the current version; ${half.us} us with half the screens moved since; ${all.us} us with all moved since`)

const rows = [
  { measure: 'a move, unversioned (CPU us)', value: Math.round(plainUs * 10) / 10 },
  { measure: 'a move, versioned (CPU us)', value: Math.round(versionedUs * 10) / 10 },
  { measure: 'a page of 200, first page (CPU us)', value: first.us },
  { measure: 'a page of 200, current version after the moves (CPU us)', value: current.us },
  { measure: 'a page of 200, half the screens moved since (CPU us)', value: half.us },
  { measure: 'a page of 200, every screen moved since (CPU us)', value: all.us },
  { measure: 'past keys kept', value: past.entries },
  { measure: 'bytes per past key (adslot_past + adslot_past_ends)', value: Math.round(perKey) }
]
saveTable('walks', `Versioned adslots order at ${screens.toLocaleString('en-US')} screens (npm run bench -- walks)`, rows,
  `${new Date().toISOString().slice(0, 10)}, in-process, LMDB with the service's options, ${BATCH} moves a transaction. A page reads the order at a version through matches() (src/inventory/adslots/query.ts), without filters.`)
await store.close()
rmSync(dir, { recursive: true, force: true })
