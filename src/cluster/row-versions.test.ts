import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { openStore } from '../store/store.js'
import { admits, copyStamp, RowVersions } from './row-versions.js'
import { packStamped, packValue, Stamped, unpackEntry } from './state-keys.js'

// Which of a row's values, arriving in the state bucket in any order, a node keeps (issue 47): a copy of a write the
// names' log accepted that lands late is older than what was written since, on every node.

function versions (t: { teardown (fn: () => unknown): void }): RowVersions {
  const dir = mkdtempSync(join(tmpdir(), 'oohbid-versions-'))
  const s = openStore(dir, undefined, undefined, { replicate: true })
  t.teardown(async () => { await s.close(); rmSync(dir, { recursive: true, force: true }) })
  const v = new RowVersions(s)
  const admit = v.admit.bind(v)
  v.admit = (kvKey, bytes, revision) => s.write(() => admit(kvKey, bytes, revision))
  return v
}

const copy = (seq: number, value: unknown): Buffer => packStamped(RowVersions.copy(seq, { value }))
const plain = (stamp: number | undefined, value: unknown): Buffer => stamp === undefined ? packValue(value) : packStamped(new Stamped({ stamp }, value))

t.test('a stamped value travels as itself, a removal as a put', async (t) => {
  t.same(unpackEntry(packStamped(new Stamped({ stamp: 8, rev: 3 }, { a: 1 }))), { value: { a: 1 }, at: { stamp: 8, rev: 3 } })
  t.same(unpackEntry(packStamped(new Stamped({ stamp: 9 }, undefined))), { value: undefined, at: { stamp: 9 } })
  t.same(unpackEntry(packValue(['a', 1])), { value: ['a', 1] }, 'a plain value, even an array, is not read as stamped')
})

t.test('the rule: plain writes always, copies only past the held stamp, repairs only past the held version', async (t) => {
  const held = { stamp: copyStamp(5), rev: 40, value: 'x' }
  t.ok(admits(undefined, { stamp: 2 }), 'nothing held: anything')
  t.ok(admits(held, undefined), 'a plain write with no stamp (its node never had the row stamped): the bucket\'s order decides')
  t.ok(admits(held, { stamp: 3 }), 'a plain write stamped lower (its node behind): still')
  t.ok(admits(held, { stamp: copyStamp(6) }), 'a copy the log accepted later')
  t.notOk(admits(held, { stamp: copyStamp(5) }), 'the same copy again')
  t.notOk(admits(held, { stamp: copyStamp(4) }), 'a copy accepted earlier: landed late')
  t.ok(admits(held, { stamp: copyStamp(5), rev: 41 }), 'a repair of a value that landed later')
  t.notOk(admits(held, { stamp: copyStamp(5), rev: 40 }), 'a repair of the held value itself')
  t.notOk(admits(held, { stamp: copyStamp(5), rev: 39 }), 'a repair of an older value')
})

t.test('a writer paused between the log\'s verdict and its copy: its copy, landing after the next holder\'s, is older everywhere, and the held value is what goes back', async (t) => {
  const v = versions(t)
  t.same(v.admit('screens.k', copy(10, 'by a'), 1), { value: 'by a' }, 'a\'s write, copied by the next holder')
  t.same(v.admit('screens.k', copy(12, 'by b'), 2), { value: 'by b' }, 'b\'s, accepted later')
  t.equal(v.admit('screens.k', copy(10, 'by a'), 3), 'older', 'a\'s own copy, at last')
  t.same(v.repairOver('screens.k', { bytes: copy(10, 'by a'), revision: 3 }), new Stamped({ stamp: copyStamp(12), rev: 2 }, 'by b'), 'b\'s value goes back on top')
  t.equal(v.admit('screens.k', packStamped(new Stamped({ stamp: copyStamp(12), rev: 2 }, 'by b')), 4), 'held', 'the repair, come back: nothing more to put right')
  t.equal(v.repairOver('screens.k', { bytes: packStamped(new Stamped({ stamp: copyStamp(12), rev: 2 }, 'by b')), revision: 4 }), undefined, 'and another node that sees it there puts nothing')
  t.same(v.held('screens.k'), { value: 'by b' }, 'a refused write of the row goes back to b\'s value')
})

t.test('a plain write after a copy wins over that copy sent again, and is not lost to a node that was behind', async (t) => {
  const v = versions(t)
  v.admit('screens.k', copy(10, 'locked'), 1)
  t.same(v.outgoing('screens.k', 'plain'), new Stamped({ stamp: copyStamp(10) + 1 }, 'plain'), 'a node holding the copy stamps its plain write just above it')
  t.same(v.admit('screens.k', plain(undefined, 'from a node behind'), 2), { value: 'from a node behind' }, 'a plain write from a node that never saw the copy: the bucket\'s order')
  t.equal(v.admit('screens.k', copy(10, 'locked'), 3), 'older', 'the copy sent again (its writer woken) does not undo it')
  t.same(v.repairOver('screens.k', { bytes: copy(10, 'locked'), revision: 3 }), new Stamped({ stamp: copyStamp(10), rev: 2 }, 'from a node behind'))
  t.same(v.admit('screens.k', copy(11, 'locked later'), 4), { value: 'locked later' }, 'a copy the log accepted later does')
  t.same(v.admit('screens.k', plain(undefined, 'removed'), 5), { value: 'removed' })
  t.equal(v.outgoing('other.k', 'v'), 'v', 'a row never stamped goes plain')
  t.same(v.admit('other.k', plain(undefined, 'v'), 6), { value: 'v' })
  t.equal(v.held('other.k'), undefined, 'and keeps no version')
})
