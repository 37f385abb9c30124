import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { openStore, type Store } from '../store/store.js'
import { collectPast, currentVersion, entriesAt, pastDue, recordMove, touchWalk } from './adslot-versions.js'
import type { IndexKey } from './records.js'

function freshStore (t: Test): Store {
  const dir = mkdtempSync(join(tmpdir(), 'oohbid-versions-'))
  const store = openStore(dir)
  t.teardown(async () => {
    await store.close()
    rmSync(dir, { recursive: true, force: true })
  })
  return store
}

/** Moves a screen to `to` (undefined: out of the order) as Inventory does, in one transaction. */
function place (store: Store, id: string, to: IndexKey | undefined, now: number): void {
  store.write(() => {
    const from = store.adslotPos.get(id)
    const held = from !== undefined ? store.adslotIndex.get(from)![12] ?? 0 : 0
    if (from !== undefined) store.adslotIndex.removeSync(from)
    const since = recordMove(store, id, from, held, now)
    if (to === undefined) { store.adslotPos.removeSync(id); return }
    store.adslotIndex.putSync(to, ['gym', 'US', 'TX', 'austin', 0, 1, 0, 2, 0, 0, 5, 1, since])
    store.adslotPos.putSync(id, to)
  })
}

const ids = (store: Store, version: number): string[] => [...entriesAt(store, version, { start: [0], end: [1] })].map((e) => e.at[3])

t.test('a walk reads the order as it stood at its version, each screen once', async (t) => {
  const store = freshStore(t)
  place(store, 'a', [0, 0, -30, 'a'], 1000)
  place(store, 'b', [0, 0, -20, 'b'], 1000)
  place(store, 'c', [0, 1, -10, 'c'], 1000)
  const v1 = currentVersion(store)
  t.same(ids(store, v1), ['a', 'b', 'c'])
  place(store, 'c', [0, 0, -40, 'c'], 2000) // rises ahead of a
  place(store, 'a', [0, 2, 1e9, 'a'], 2000) // falls behind c
  place(store, 'd', [0, 0, -50, 'd'], 2000) // registered after v1
  place(store, 'b', undefined, 2000) // left the order
  t.same(ids(store, v1), ['a', 'b', 'c'], 'v1 as it stood, whatever moved since')
  const v2 = currentVersion(store)
  t.same(ids(store, v2), ['d', 'c', 'a'], 'the current order')
  place(store, 'c', [0, 1, -10, 'c'], 3000) // back to the very key it held at v1
  t.same(ids(store, v1), ['a', 'b', 'c'], 'a key held twice is listed once')
  t.same(ids(store, v2), ['d', 'c', 'a'])
  const after = [...entriesAt(store, v1, { start: [0, 0, -20, 'b'], end: [1], exclusiveStart: true })].map((e) => e.at[3])
  t.same(after, ['c'], 'a page continues after the last key it listed')
  const current = [...entriesAt(store, v2, { start: [0], end: [1] })]
  t.same(current.map((e) => [e.at[3], e.tuple !== undefined]), [['d', true], ['c', false], ['a', true]], 'an entry a screen still holds carries its value')
})

t.test('one transaction takes one version, however many keys it moves', async (t) => {
  const store = freshStore(t)
  place(store, 'a', [0, 0, -30, 'a'], 0)
  place(store, 'b', [0, 0, -20, 'b'], 0)
  const v1 = currentVersion(store)
  store.write(() => {
    place(store, 'a', [0, 0, -10, 'a'], 1000)
    place(store, 'a', [0, 0, -5, 'a'], 1000)
    place(store, 'b', [0, 0, -40, 'b'], 1000)
  })
  t.equal(currentVersion(store), v1 + 1)
  t.equal(store.adslotPast.getCount(), 2, 'a key held only within the transaction is not kept')
  t.same(ids(store, v1), ['a', 'b'])
  t.same(ids(store, v1 + 1), ['b', 'a'])
})

t.test('past keys are kept while a walk may read them', async (t) => {
  const store = freshStore(t)
  const keep = 60_000
  place(store, 'a', [0, 0, -30, 'a'], 0)
  const v1 = currentVersion(store)
  for (let i = 1; i <= 5; i++) place(store, 'a', [0, 0, -30 - i, 'a'], i * 1000)
  t.equal(store.adslotPast.getCount(), 5)
  t.notOk(pastDue(store, 30_000, keep), 'nothing is due within the window a first page may still be followed in')
  store.write(() => touchWalk(store, v1, 100_000))
  t.ok(pastDue(store, 100_000, keep))
  t.equal(store.write(() => collectPast(store, 100_000, keep)), 0, 'a walk read within the window holds them')
  t.same(ids(store, v1), ['a'])
  t.equal(store.write(() => collectPast(store, 200_000, keep)), 5, 'once it is not, they go')
  t.equal(store.adslotWalks.getCount(), 0, 'and so does the walk')
  t.same(ids(store, currentVersion(store)), ['a'])
})
