import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import type { Fence } from './changes.js'
import { openStore, type Store } from './store.js'
import type { SeatRecord } from '../accounts/records.js'

/** A store as a cluster node opens it: writes to the replicated tables are recorded. */
function nodeStore (t: { teardown (fn: () => unknown): void }): Store {
  const dir = mkdtempSync(join(tmpdir(), 'oohbid-changes-'))
  const store = openStore(dir, undefined, undefined, { replicate: true })
  t.teardown(async () => { await store.close(); rmSync(dir, { recursive: true, force: true }) })
  return store
}

const seat = (id: string, status = 'approved') => ({ seat_id: id, status }) as unknown as SeatRecord

t.test('a committed transaction records its replicated rows under the next seq, in write order', async (t) => {
  const store = nodeStore(t)
  const changes = store.changes!
  let told = 0
  changes.onCommitted(() => told++)
  store.write(() => {
    store.seats.putSync('a', seat('a'))
    store.keyDigests.putSync('digest', 'key_1')
    store.meta.putSync('not-replicated', 1)
    store.seats.removeSync('gone')
  })
  store.write(() => store.seats.putSync('b', seat('b')))
  t.same(changes.pending(10), [
    { seq: 1, changes: [['seats', 'a', seat('a')], ['key_digests', 'digest', 'key_1'], ['seats', 'gone', undefined]] },
    { seq: 2, changes: [['seats', 'b', seat('b')]] }
  ])
  t.equal(told, 2, 'each commit with changes is told once')
  t.equal(changes.takeCommitted(), 2, 'the highest seq this thread committed')
  t.equal(changes.takeCommitted(), 0, 'and taken once')
  t.equal(changes.waiting, 2)
})

t.test('a transaction that wrote only eventual tables (FEIN, heartbeats) ships but is not one an answer waits for', async (t) => {
  const store = nodeStore(t)
  const changes = store.changes!
  const status = { last_heartbeat: 1, online: true, hours: [] }
  store.write(() => store.status.putSync('scr_1', status))
  t.same(changes.pending(10), [{ seq: 1, changes: [['status', 'scr_1', status]] }], 'recorded like any change')
  t.equal(changes.takeCommitted(), 0, 'no answer waits for it')
  store.write(() => {
    store.status.putSync('scr_2', status)
    store.screens.putSync('scr_2', { screen_id: 'scr_2' } as never)
  })
  t.equal(changes.takeCommitted(), 2, 'one that also wrote a screen is waited for')
  store.write(() => store.fein.removeSync('scr_2'))
  t.equal(changes.takeCommitted(), 0, 'and the next eventual one is not')
})

t.test('a rolled-back transaction, a dry run, records nothing, and a write applied from the engine records nothing', async (t) => {
  const store = nodeStore(t)
  const changes = store.changes!
  t.throws(() => store.write(() => { store.seats.putSync('a', seat('a')); throw new Error('rollback') }))
  store.write(() => changes.applying(() => store.seats.putSync('b', seat('b'))))
  t.same(changes.pending(10), [])
  t.equal(changes.recorded, 0)
  t.equal(store.seats.get('b')?.seat_id, 'b', 'the applied row is written')
  store.write(() => store.seats.putSync('c', seat('c')))
  t.same(changes.pending(10).map((p) => p.seq), [1], 'the next recorded transaction takes seq 1')
})

t.test('shipped rows leave the log, the seq never goes back, and pending keys name what still waits', async (t) => {
  const store = nodeStore(t)
  const changes = store.changes!
  for (const id of ['a', 'b', 'c']) store.write(() => store.seats.putSync(id, seat(id)))
  store.write(() => changes.shipped(2))
  t.same(changes.pending(10).map((p) => p.seq), [3])
  store.write(() => store.seats.putSync('c', seat('c')))
  t.same([...changes.pendingKeys((table, key) => `${table}/${String(key)}`)], [['seats/c', 4]], 'each with the seq of its latest change')
  store.write(() => changes.shipped(4))
  store.write(() => store.seats.putSync('d', seat('d')))
  t.same(changes.pending(10).map((p) => p.seq), [5], 'numbering goes on after the log is emptied')
  t.equal(changes.recorded, 5)
})

t.test('a transaction under a record\'s lock is kept with the lock and each row\'s value before it, and so is one made on a later turn; a closed fence records none', async (t) => {
  const store = nodeStore(t)
  const changes = store.changes!
  store.write(() => store.seats.putSync('a', seat('a', 'pending')))
  const fence: Fence = { name: 'lock\u0000seat:a', owner: 'req_1', seqs: [] }
  changes.fenced(fence, () => store.write(() => {
    store.seats.putSync('a', seat('a', 'approved'))
    store.seats.putSync('a', seat('a', 'suspended'))
    store.seats.putSync('b', seat('b'))
  }))
  await changes.fenced(fence, async () => {
    await new Promise((resolve) => setImmediate(resolve))
    store.write(() => store.seats.removeSync('b'))
  })
  t.same(changes.pending(10).slice(1), [
    { seq: 2, changes: [['seats', 'a', seat('a', 'approved')], ['seats', 'a', seat('a', 'suspended')], ['seats', 'b', seat('b')]], fence: { name: 'lock\u0000seat:a', owner: 'req_1' }, before: [seat('a', 'pending'), seat('a', 'approved'), undefined] },
    { seq: 3, changes: [['seats', 'b', undefined]], fence: { name: 'lock\u0000seat:a', owner: 'req_1' }, before: [seat('b')] }
  ], 'each write\'s value before it, in the transaction')
  t.same(fence.seqs, [2, 3], 'the fence knows the transactions committed under it')
  t.same([...changes.pendingKeys((table, key) => `${table}/${String(key)}`)], [['seats/a', 2], ['seats/b', 3]], 'a fenced transaction\'s rows wait like any')
  fence.closed = true
  changes.fenced(fence, () => store.write(() => store.seats.putSync('c', seat('c'))))
  t.same(changes.pending(10)[3], { seq: 4, changes: [['seats', 'c', seat('c')]] }, 'once the lock is given back, work it began writes under none')
  t.same(fence.seqs, [2, 3])
})

t.test('an event raised under a record\'s lock is held with its transaction, and one raised under none is not', async (t) => {
  const store = nodeStore(t)
  const changes = store.changes!
  const fence: Fence = { name: 'lock\u0000seat:h', owner: 'req_h', seqs: [] }
  t.notOk(store.write(() => changes.hold({ type: 'x' })), 'under no lock: the outbox takes it at once')
  t.equal(changes.waiting, 0, 'and nothing is recorded for it')
  t.notOk(changes.hold({ type: 'x' }), 'outside a transaction: nothing to hold it with')
  t.ok(changes.fenced(fence, () => store.write(() => {
    store.seats.putSync('h', seat('h'))
    return changes.hold({ type: 'audit.seat.suspended' })
  })), 'under a lock: held')
  t.ok(changes.fenced(fence, () => store.write(() => changes.hold({ type: 'only an event' }))), 'even by a transaction that wrote no row')
  t.same(changes.pending(10).slice(-2).map((p) => [p.changes.length, p.events]), [[1, [{ type: 'audit.seat.suspended' }]], [0, [{ type: 'only an event' }]]], 'kept with the transaction, for the shipper to deliver once the names\' log accepts it')
  t.same(fence.seqs.length, 2)
})

t.test('a single node records nothing', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'oohbid-changes-'))
  const store = openStore(dir)
  t.teardown(async () => { await store.close(); rmSync(dir, { recursive: true, force: true }) })
  store.write(() => store.seats.putSync('a', seat('a')))
  t.equal(store.changes, undefined)
})
