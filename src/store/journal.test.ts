import { spawnSync } from 'node:child_process'
import { appendFileSync, cpSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import t, { type Test } from 'tap'
import { Journal, recoverJournals, type Durable } from './journal.js'
import { JournalTurns } from './journal-turns.js'
import { openStore, type Store } from './store.js'

// The journal over a real LMDB environment, without the service: each entry adds its amount to a counter in meta,
// so an entry applied twice or not at all shows in the sums.

interface Entry { id: string, n: number }

const apply = (store: Store) => (entries: readonly Entry[]) => {
  for (const e of entries) store.meta.putSync(`test:${e.id}`, ((store.meta.get(`test:${e.id}`) as number | undefined) ?? 0) + e.n)
}
const turn = () => new Promise((resolve) => setImmediate(resolve))

function fixture (t: Test): { dir: string, store: Store, journal: Journal<Entry>, how: Durable[] } {
  const dataDir = mkdtempSync(join(tmpdir(), 'oohbid-journal-'))
  const store = openStore(dataDir)
  t.teardown(async () => { await store.close(); rmSync(dataDir, { recursive: true, force: true }) })
  const how: Durable[] = []
  const dir = join(dataDir, 'journal')
  const journal = new Journal<Entry>({ store, dir, owner: 'thread-1', apply: apply(store), fsync: false, counted: (h) => how.push(h) })
  return { dir, store, journal, how }
}

/** A store as a cluster node opens it: its replicated tables' writes recorded for the engine. */
function clusterStore (t: Test): { dataDir: string, store: Store } {
  const dataDir = mkdtempSync(join(tmpdir(), 'oohbid-journal-'))
  const store = openStore(dataDir, undefined, undefined, { replicate: true })
  t.teardown(async () => { await store.close(); rmSync(dataDir, { recursive: true, force: true }) })
  return { dataDir, store }
}

t.test('an idle thread commits at once; under load a turn\'s entries are journaled and applied when the turn ends', async (t) => {
  const { dir, store, journal, how } = fixture(t)
  journal.record({ id: 'a', n: 1 })
  t.equal(store.meta.get('test:a'), 1, 'alone in its turn: committed before record returns')
  journal.record({ id: 'a', n: 2 })
  await turn()
  t.same(how, ['at_once', 'at_once'], 'the turn before had one entry: nothing to share a commit with')
  for (let i = 0; i < 5; i++) journal.record({ id: 'b', n: 1 })
  t.same(how.slice(2), ['journaled', 'journaled', 'journaled', 'journaled', 'journaled'], 'after a turn of two, entries are journaled')
  t.equal(readdirSync(dir).length, 1, 'in one journal file')
  store.refresh()
  t.equal(store.meta.get('test:b'), undefined, 'not in LMDB yet')
  const before = store.held.transactions
  await turn()
  store.refresh()
  t.equal(store.meta.get('test:b'), 5, 'applied when the turn ended')
  t.equal(store.held.transactions - before, 1, 'in one transaction')
  journal.close()
  t.same(readdirSync(dir), [], 'a graceful close applies everything and removes the file')
  t.same([...store.meta.getKeys({ start: 'journal:', end: 'journal:\uffff' })], [], 'and its applied mark')
})

t.test('on a cluster node an entry that replicates waits for its turn\'s commit, unwritten to the file; one that does not is journaled as on one node', async (t) => {
  const { dataDir, store } = clusterStore(t)
  const dir = join(dataDir, 'journal')
  const how: Durable[] = []
  const journal = new Journal<Entry>({ store, dir, owner: 'thread-1', apply: apply(store), fsync: false, counted: (h) => how.push(h), replicates: (e) => e.id !== 'local' })
  journal.record({ id: 'bid', n: 1 })
  t.same(how, ['engine'], 'idle, and still not committed at once: its answer waits for the engine after the turn\'s commit anyway')
  const applied = journal.applied()
  t.not(applied, undefined, 'its answer has a commit to wait for')
  journal.record({ id: 'bid', n: 1 })
  t.equal(existsSync(dir), false, 'no journal file written')
  store.refresh()
  t.equal(store.meta.get('test:bid'), undefined, 'not in LMDB before the turn ends')
  const before = store.held.transactions
  await turn()
  store.refresh()
  t.equal(store.meta.get('test:bid'), 2, 'applied when the turn ended')
  t.equal(store.held.transactions - before, 1, 'both in one transaction')
  t.type(await applied, 'number', 'and the answer waiting for it told so')
  journal.record({ id: 'local', n: 1 })
  journal.record({ id: 'local', n: 1 })
  journal.record({ id: 'bid', n: 1 })
  t.same(how.slice(2), ['journaled', 'journaled', 'engine'], 'an entry that does not replicate is journaled, as on one node')
  t.equal(readdirSync(dir).length, 1, 'into the journal file')
  // A kill -9 now: a copy of the data directory as it stands replays what was answered from the file, nothing else.
  const copy = mkdtempSync(join(tmpdir(), 'oohbid-journal-'))
  cpSync(dir, join(copy, 'journal'), { recursive: true })
  const restarted = openStore(copy)
  t.teardown(async () => { await restarted.close(); rmSync(copy, { recursive: true, force: true }) })
  const replayed: Entry[] = []
  recoverJournals(restarted, join(copy, 'journal'), (entries: readonly Entry[]) => { replayed.push(...entries) }, 'thread-1')
  t.same(replayed, [{ id: 'local', n: 1 }, { id: 'local', n: 1 }], 'a recovery replays the journaled entries only')
  journal.close()
})

t.test('on a cluster node a full batch is applied when the next entry comes, and every answer waits for its own entry\'s commit seq', async (t) => {
  const { dataDir, store } = clusterStore(t)
  const journal = new Journal<Entry>({ store, dir: join(dataDir, 'journal'), owner: 'thread-1', fsync: false, apply: (entries) => { for (const e of entries) store.settings.putSync(`test:${e.id}`, e.n) }, replicates: () => true })
  const waits: Array<Promise<number> | undefined> = []
  for (let i = 0; i < 513; i++) {
    journal.record({ id: `bid-${i}`, n: 1 })
    waits.push(journal.applied())
  }
  t.ok(waits.every((w) => w instanceof Promise), 'every answer waits, the one that filled the batch too')
  const seqs = await Promise.all(waits)
  t.ok(seqs[0]! > 0 && seqs.slice(0, 512).every((seq) => seq === seqs[0]), `the batch's 512 with its commit's seq (${seqs[0]!})`)
  t.ok(seqs[512]! > seqs[0]!, `the entry after it with its turn's commit (${seqs[512]!})`)
  t.equal(journal.applied(), undefined, 'a later request with nothing pending waits for nothing')
  journal.close()
})

t.test('a thread waits for the writes other threads journaled, and applies its own instead of waiting for them', async (t) => {
  const { dir, store } = fixture(t)
  const memory = JournalTurns.memory(2)
  const one = new Journal<Entry>({ store, dir, owner: 'thread-1', apply: apply(store), fsync: false, turns: new JournalTurns(memory, 1) })
  const two = new Journal<Entry>({ store, dir, owner: 'thread-2', apply: apply(store), fsync: false, turns: new JournalTurns(memory, 2) })
  /** Two entries in a turn, then a third in the next: journaled, and applied only when that turn ends. */
  const busy = async (journal: Journal<Entry>, id: string) => {
    journal.record({ id, n: 1 })
    journal.record({ id, n: 1 })
    await turn()
    journal.record({ id, n: 1 })
  }
  t.ok(two.awaitOthers(performance.now() + 50), 'nothing journaled anywhere: no wait')
  await busy(one, 'w')
  // Thread 1 answered and has not reached the end of its turn; here it never will, so thread 2 waits in vain.
  t.notOk(two.awaitOthers(performance.now() + 50), 'thread 1 holds a journaled write: thread 2 waits until its deadline')
  one.flush()
  t.ok(two.awaitOthers(performance.now() + 50), 'once thread 1 applied it, thread 2 goes on')
  store.refresh()
  t.equal(store.meta.get('test:w'), 3)
  await busy(two, 'v')
  t.ok(two.awaitOthers(performance.now() + 50), 'its own journaled write does not hold a thread up')
  store.refresh()
  t.equal(store.meta.get('test:v'), 3, 'it is applied first')
  one.close()
  two.close()
})

t.test('inside a write transaction an entry is applied in it, and rolls back with it', async (t) => {
  const { store, journal } = fixture(t)
  t.throws(() => store.write(() => { journal.record({ id: 'c', n: 7 }); throw new Error('rolled back') }))
  t.equal(store.meta.get('test:c'), undefined)
  store.write(() => journal.record({ id: 'c', n: 7 }))
  t.equal(store.meta.get('test:c'), 7)
})

const child = `
const { openStore } = await import(process.argv[1])
const { Journal } = await import(process.argv[2])
const store = openStore(process.argv[3])
const apply = (entries) => { for (const e of entries) store.meta.putSync('test:' + e.id, (store.meta.get('test:' + e.id) ?? 0) + e.n) }
const journal = new Journal({ store, dir: process.argv[3] + '/journal', owner: 'thread-1', apply, fsync: false })
for (let i = 0; i < 3; i++) journal.record({ id: 'before', n: 1 })
await new Promise((resolve) => setImmediate(resolve))
for (let i = 0; i < Number(process.argv[4]); i++) journal.record({ id: 'journaled', n: 1 })
process.stdout.write('acknowledged\\n')
process.kill(process.pid, 'SIGKILL')
`

/** Runs the child on dataDir: three entries at once, then count journaled in the next turn, then kill -9. */
function crash (dataDir: string, count: number) {
  const here = (name: string) => fileURLToPath(new URL(name, import.meta.url))
  return spawnSync(process.execPath, ['--input-type=module', '-e', child, here('./store.js'), here('./journal.js'), dataDir, String(count)], { encoding: 'utf8' })
}

t.test('kill -9 before the turn ends: recovery applies every journaled entry exactly once, and a torn tail is left out', async (t) => {
  const dataDir = mkdtempSync(join(tmpdir(), 'oohbid-journal-crash-'))
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }))
  const run = crash(dataDir, 40)
  t.equal(run.signal, 'SIGKILL')
  t.equal(run.stdout, 'acknowledged\n', 'the entries were acknowledged before the kill')
  const dir = join(dataDir, 'journal')
  const [file] = readdirSync(dir)
  // A crash mid-append leaves a frame cut short.
  appendFileSync(join(dir, file!), Buffer.from([200, 0, 0, 0, 1, 2, 3, 4, 123]))
  const store = openStore(dataDir)
  t.teardown(() => store.close())
  t.equal(store.meta.get('test:before'), 3)
  t.equal(store.meta.get('test:journaled'), undefined, 'the journaled entries never reached LMDB')
  t.equal(recoverJournals(store, dir, apply(store), 'thread-2'), 0, 'another owner\'s files are not touched')
  t.equal(recoverJournals(store, dir, apply(store), 'thread-1'), 40)
  t.equal(store.meta.get('test:journaled'), 40, 'each applied once')
  t.same(readdirSync(dir), [], 'the file is gone')
  t.equal(recoverJournals(store, dir, apply(store)), 0, 'a second recovery applies nothing')
  t.equal(store.meta.get('test:journaled'), 40)
})

t.test('a turn of more than a batch applies as it goes; a failed recovery leaves the file to replay whole', async (t) => {
  const dataDir = mkdtempSync(join(tmpdir(), 'oohbid-journal-crash-'))
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }))
  const run = crash(dataDir, 1200)
  t.equal(run.signal, 'SIGKILL')
  const store = openStore(dataDir)
  t.teardown(() => store.close())
  t.equal(store.meta.get('test:journaled'), 1024, 'two full batches were applied within the turn')
  const dir = join(dataDir, 'journal')
  t.throws(() => recoverJournals(store, dir, () => { throw new Error('disk full') }), /disk full/)
  t.equal(store.meta.get('test:journaled'), 1024, 'the failed batch rolled back')
  t.equal(readdirSync(dir).length, 1, 'and its file stays')
  t.equal(recoverJournals(store, dir, apply(store)), 176, 'the next start applies the rest')
  t.equal(store.meta.get('test:journaled'), 1200, 'each entry once')
})

t.test('on a cluster node, applied() waits for the turn only when an entry pending may write a replicated table, and gives that commit\'s change seq', async (t) => {
  const { dataDir, store } = clusterStore(t)
  interface Shipping { id: string, n: number, replicated: boolean }
  const journal = new Journal<Shipping>({
    store,
    dir: join(dataDir, 'journal'),
    owner: 'thread-1',
    fsync: false,
    apply: (entries) => {
      for (const e of entries) {
        if (e.replicated) store.settings.putSync(`test:${e.id}`, e.n)
        else store.meta.putSync(`test:${e.id}`, e.n)
      }
    },
    replicates: (e) => e.replicated
  })
  journal.record({ id: 'warm', n: 1, replicated: false })
  journal.record({ id: 'warm', n: 2, replicated: false })
  await turn()
  journal.record({ id: 'local', n: 1, replicated: false })
  t.equal(journal.applied(), undefined, 'a pending entry that writes no replicated table: nothing to wait for')
  journal.record({ id: 'shared', n: 1, replicated: true })
  const waiting = [journal.applied(), journal.applied()]
  t.ok(waiting.every((w) => w instanceof Promise), 'one that may: its answer waits for the turn')
  await turn()
  const seqs = await Promise.all(waiting)
  t.ok(seqs[0]! > 0, `resolved with the turn's change seq (${seqs[0]!})`)
  t.same(seqs, [store.changes!.recorded, store.changes!.recorded], 'the same for every request of the turn: the last seq recorded')
  t.equal(journal.applied(), undefined, 'nothing pending after the turn')
  journal.close()
})
