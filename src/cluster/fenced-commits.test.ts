import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import type { SeatRecord } from '../accounts/records.js'
import type { Change } from '../store/changes.js'
import { openStore, type Store } from '../store/store.js'
import { commitCommand, FencedCommits } from './fenced-commits.js'
import { nameMachine } from './name-claims.js'
import { lockName, LOCK_TTL_MS } from './record-locks.js'
import { stateKey } from './state-keys.js'

// Writes under a record's lock as the names' log decides them, without an engine: a commit at its place in the log
// takes effect only while its lock's claim is its writer's, whatever the writer's clock or pause; a refused one's rows
// are put back on the node that wrote them.

function nodeStore (t: { teardown (fn: () => unknown): void }): Store {
  const dir = mkdtempSync(join(tmpdir(), 'oohbid-fenced-'))
  const s = openStore(dir, undefined, undefined, { replicate: true })
  t.teardown(async () => { await s.close(); rmSync(dir, { recursive: true, force: true }) })
  return s
}

const seat = (id: string, status: string) => ({ seat_id: id, status }) as unknown as SeatRecord
const from = { node: 'n1', incarnation: 'i1' }
const lock = lockName('seat:s1')

function node (t: { teardown (fn: () => unknown): void }) {
  const store = nodeStore(t)
  const derived: string[] = []
  const commits = new FencedCommits({ store, onApplied: (table, key) => derived.push(`${table}/${String(key)}`), writer: 'data-1' })
  const m = nameMachine(store, commits)
  let seq = 0
  const apply = (body: unknown, logTime: number) => store.write(() => m.apply(body, { log: 'NAMES', seq: ++seq, logTime, from }))
  const commit = (changes: Change[], fence?: { name: string, owner: string }, before?: unknown[]) => commitCommand('data-1', ++seq, changes, fence, before).body
  return { store, commits, apply, commit, derived, shown: (id: string) => store.seats.get(id)?.status }
}

t.test('a write under a lock counts while its claim is the writer\'s, and is refused once another request took the lock over, however late it lands', async (t) => {
  const n = node(t)
  t.same(n.apply({ op: 'claim', name: lock, owner: 'req_a', take_over_after_ms: LOCK_TTL_MS }, 1000), { status: 'accepted' })
  const first = n.commit([['seats', 's1', seat('s1', 'approved')]], { name: lock, owner: 'req_a' })
  t.same(n.apply(first, 1010), { status: 'accepted', result: { seq: 3 } }, 'the holder\'s write counts, at its place in the log')
  t.equal(n.store.ownCommits.get(first.id), 3, 'its writer remembers it counted, and where, should it ask again past the log\'s memory of keys')
  t.equal(n.shown('s1'), 'approved', 'and is written on every node applying the log')
  t.same(n.derived, ['seats/s1'], 'with what derives from it')
  t.same(n.store.fencedRows.get(stateKey('seats', 's1')), { value: seat('s1', 'approved') }, 'the row is the log\'s from now on')
  t.same(n.apply({ op: 'claim', name: lock, owner: 'req_b', take_over_after_ms: LOCK_TTL_MS }, 1000 + LOCK_TTL_MS - 1), { status: 'refused', reason: 'held' }, 'a live holder keeps the lock')
  t.same(n.apply({ op: 'claim', name: lock, owner: 'req_b', take_over_after_ms: LOCK_TTL_MS }, 1001 + LOCK_TTL_MS), { status: 'accepted' }, 'a holder 30 s old (paused) is taken over')
  t.same(n.apply(n.commit([['seats', 's1', seat('s1', 'suspended')]], { name: lock, owner: 'req_a' }), 2000 + LOCK_TTL_MS), { status: 'refused', reason: 'lock_lost' }, 'the paused holder\'s write, landing after the takeover, is refused')
  t.equal(n.shown('s1'), 'approved', 'and changes nothing')
  t.match(n.apply(n.commit([['seats', 's1', seat('s1', 'revoked')]], { name: lock, owner: 'req_b' }), 2001 + LOCK_TTL_MS), { status: 'accepted' }, 'the new holder\'s write counts')
  t.same(n.apply({ op: 'release', name: lock, owner: 'req_b' }, 2002 + LOCK_TTL_MS), { status: 'accepted' })
  t.same(n.apply(n.commit([['seats', 's1', seat('s1', 'approved')]], { name: lock, owner: 'req_b' }), 2003 + LOCK_TTL_MS), { status: 'refused', reason: 'lock_lost' }, 'a write landing after its lock was given back is refused too')
  t.equal(n.shown('s1'), 'revoked')
})

t.test('a locked transaction\'s rows that are not records are kept by the log until they are copied, not written from it', async (t) => {
  const n = node(t)
  n.apply({ op: 'claim', name: lock, owner: 'req_a', take_over_after_ms: LOCK_TTL_MS }, 1000)
  const screen = { screen_id: 'scr1', name: 'lobby' }
  const c = n.commit([['seats', 's1', seat('s1', 'approved')], ['screens', 'scr1', screen], ['screens', 'scr2', undefined]], { name: lock, owner: 'req_a' })
  t.match(n.apply(c, 1010), { status: 'accepted', result: { seq: 3 } })
  t.equal(n.shown('s1'), 'approved', 'its record is written from the log')
  t.equal(n.store.screens.get('scr1'), undefined, 'its screen reaches the tables through the state bucket, copied there (row-versions.ts)')
  t.same([...n.commits.pending(lock)], [[3, [[stateKey('screens', 'scr1'), { value: screen }], [stateKey('screens', 'scr2'), { removed: true }]]]], 'kept, under its lock and place, for its writer or the lock\'s next holder to copy')
  t.same([...n.commits.pending(lock, 4)], [], 'by place')
  t.same([...n.commits.pending(lockName('seat:other'))], [], 'and by lock')
  t.same(n.apply({ op: 'copied', name: lock, seq: 3 }, 1020), { status: 'accepted' })
  t.same([...n.commits.pending(lock)], [], 'once copied, the log lets go of them')
  n.apply({ op: 'claim', name: lock, owner: 'req_b', take_over_after_ms: 0 }, 1030)
  n.apply(n.commit([['screens', 'scr1', { screen_id: 'scr1', name: 'late' }]], { name: lock, owner: 'req_a' }), 1040)
  t.same([...n.commits.pending(lock)], [], 'a refused transaction keeps nothing')
})

t.test('a record written under no lock goes through the log too, in its order, and is the log\'s from then on', async (t) => {
  const n = node(t)
  t.match(n.apply(n.commit([['seats', 's2', seat('s2', 'pending')]]), 1000), { status: 'accepted' }, 'a write under no lock is accepted')
  t.equal(n.shown('s2'), 'pending')
  t.same(n.store.fencedRows.get(stateKey('seats', 's2')), { value: seat('s2', 'pending') })
  t.match(n.apply(n.commit([['seats', 's2', undefined]]), 1001), { status: 'accepted' })
  t.equal(n.shown('s2'), undefined, 'a removal too')
  t.same(n.store.fencedRows.get(stateKey('seats', 's2')), { removed: true }, 'kept as removed: an older value in the state bucket must not bring it back')
})

t.test('a refused transaction is put back on the node that wrote it: to what the log decided of a row, else to its value before', async (t) => {
  const n = node(t)
  n.apply(n.commit([['seats', 's1', seat('s1', 'approved')]]), 1000)
  // This node's own write, made under a lock it then lost: in its tables, waiting to ship, then refused.
  n.store.write(() => n.store.changes!.applying(() => {
    n.store.seats.putSync('s1', seat('s1', 'suspended'))
    n.store.seats.putSync('s3', seat('s3', 'pending'))
  }))
  n.store.write(() => n.commits.putBack([['seats', 's1', seat('s1', 'suspended')], ['seats', 's3', seat('s3', 'pending')], ['seats', 's3', seat('s3', 'approved')]], [seat('s1', 'pending'), undefined, seat('s3', 'pending')]))
  t.equal(n.shown('s1'), 'approved', 'a row the log decides takes the log\'s value, not the one before the write (which may be older)')
  t.equal(n.shown('s3'), undefined, 'a row written twice ends as it was before the transaction: absent')
  n.store.write(() => n.store.changes!.applying(() => n.store.seats.putSync('s4', seat('s4', 'mine'))))
  n.store.write(() => n.commits.putBack([['seats', 's4', seat('s4', 'mine')]], undefined))
  t.equal(n.shown('s4'), 'mine', 'a write under no lock (refused only as late) keeps a row the log never decided')
  t.equal(n.store.changes!.waiting, 0, 'putting back records nothing to ship')
})

t.test('a node that reads on from a checkpoint has the log\'s rows in its tables', async (t) => {
  const n = node(t)
  n.store.write(() => {
    n.store.fencedRows.putSync(stateKey('seats', 's5'), { value: seat('s5', 'approved') })
    n.store.fencedRows.putSync(stateKey('seats', 's6'), { removed: true })
    n.store.changes!.applying(() => n.store.seats.putSync('s6', seat('s6', 'stale')))
  })
  n.store.write(() => n.commits.restored())
  t.equal(n.shown('s5'), 'approved')
  t.equal(n.shown('s6'), undefined, 'a removal too')
})
