import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { ApplyTurns } from './apply-turns.js'
import { openStore, type Store } from '../store/store.js'

// Logs' shares of a turn over a real LMDB environment: each share adds to a counter in meta, so a share applied twice
// or not at all shows in the sums.

const turn = () => new Promise((resolve) => setImmediate(resolve))

function fixture (t: Test): Store {
  const dir = mkdtempSync(join(tmpdir(), 'oohbid-turns-'))
  const store = openStore(dir)
  t.teardown(async () => { await store.close(); rmSync(dir, { recursive: true, force: true }) })
  return store
}

const add = (store: Store, name: string, done: string[]) => () => {
  store.meta.putSync(`test:${name}`, ((store.meta.get(`test:${name}`) as number | undefined) ?? 0) + 1)
  return () => done.push(name)
}

t.test('a turn\'s shares commit in one transaction, and each hears of it once it has', async (t) => {
  const store = fixture(t)
  const turns = new ApplyTurns(store)
  const done: string[] = []
  const before = store.held.transactions
  turns.soon(add(store, 'a', done), (err) => t.fail(String(err)))
  turns.soon(add(store, 'b', done), (err) => t.fail(String(err)))
  t.same(done, [], 'nothing before the turn runs')
  await turn()
  t.equal(store.held.transactions - before, 1, 'one transaction')
  t.same(done, ['a', 'b'], 'both told, in order')
  t.same([store.meta.get('test:a'), store.meta.get('test:b')], [1, 1], 'each applied once')
})

t.test('a share that throws fails alone: the others are applied once, in transactions of their own', async (t) => {
  const store = fixture(t)
  const turns = new ApplyTurns(store)
  const done: string[] = []
  const failed: unknown[] = []
  turns.soon(add(store, 'a', done), (err) => t.fail(String(err)))
  turns.soon(() => {
    store.meta.putSync('test:broken', 1)
    throw new Error('broken')
  }, (err) => failed.push(err))
  turns.soon(add(store, 'c', done), (err) => t.fail(String(err)))
  await turn()
  t.same(done, ['a', 'c'], 'the others told')
  t.same([store.meta.get('test:a'), store.meta.get('test:c')], [1, 1], 'applied once each, though the turn ran them twice')
  t.equal(store.meta.get('test:broken'), undefined, 'nothing of the failed share written')
  t.equal((failed[0] as Error).message, 'broken', 'the failed share hears why')
  t.equal(failed.length, 1, 'once')
})

t.test('a share alone in its turn that throws fails at once, not tried twice', async (t) => {
  const store = fixture(t)
  const turns = new ApplyTurns(store)
  let tries = 0
  const failed: unknown[] = []
  turns.soon(() => {
    tries++
    throw new Error('broken')
  }, (err) => failed.push(err))
  await turn()
  t.equal(tries, 1, 'run once')
  t.equal(failed.length, 1, 'failed heard it')
  turns.soon(add(store, 'later', []), (err) => t.fail(String(err)))
  await turn()
  t.equal(store.meta.get('test:later'), 1, 'the next turn runs')
})

t.test('a turn that committed and then threw (work after its commit failed): each log\'s entries are applied once', async (t) => {
  const store = fixture(t)
  const turns = new ApplyTurns(store)
  const done: string[] = []
  // A share as a log is: it applies the entries past the mark it reads from the store, and moves the mark.
  const log = (name: string, entries: number[]) => () => {
    const mark = (store.meta.get(`mark:${name}`) as number | undefined) ?? 0
    for (const seq of entries) if (seq > mark) store.meta.putSync(`sum:${name}`, ((store.meta.get(`sum:${name}`) as number | undefined) ?? 0) + seq)
    store.meta.putSync(`mark:${name}`, Math.max(mark, ...entries))
    return () => done.push(name)
  }
  let thrown = false
  turns.soon(log('a', [1, 2]), (err) => t.fail(String(err)))
  turns.soon(() => {
    if (!thrown) store.afterCommit(() => { thrown = true; throw new Error('after the commit') })
    return () => done.push('waker')
  }, (err) => t.fail(String(err)))
  turns.soon(log('b', [1, 2, 3]), (err) => t.fail(String(err)))
  await turn()
  t.ok(thrown, 'the work after the commit threw')
  t.same([store.meta.get('sum:a'), store.meta.get('sum:b')], [3, 6], 'each entry applied once, though every share ran twice')
  t.same(done, ['a', 'waker', 'b'], 'each share told once, after the transaction that stood')
})
