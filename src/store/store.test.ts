import { spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import t, { type Test } from 'tap'

// Issue 25: under a few seconds of bids the whole service died with
//   mdb.c:4146: Assertion 'x <= dl[0].mid' failed in mdb_freelist_save()
// The environment was opened with MDB_WRITEMAP, and a commit with loose pages (pages it wrote, then emptied) that
// reclaimed nothing from the freelist aborts the process in that mode (environmentOptions says why). Under load,
// readers holding older snapshots keep a commit from reclaiming; on a fresh file the freelist is simply empty, which
// makes the abort certain: with the options of that code, each case below ended in SIGABRT.
//
// Each case runs in a child process, because what fails is an abort no JavaScript can catch.
const lmdb = import.meta.resolve('lmdb')
const store = fileURLToPath(new URL('./store.js', import.meta.url))

function survives (t: Test, what: string, body: string): void {
  const dir = mkdtempSync(join(tmpdir(), 'oohbid-store-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const script = `import { open } from ${JSON.stringify(lmdb)}
import { environmentOptions } from ${JSON.stringify(store)}
const root = open({ path: ${JSON.stringify(join(dir, 'oohbid.lmdb'))}, ...environmentOptions({ mode: 'os', syncIntervalMs: 1000 }) })
const table = root.openDB('t', { keyEncoding: 'ordered-binary' })
const row = { stage: 'request', at: 1764000000000, seat_id: 'seat', sandbox: false, screens: ['scr_' + 'x'.repeat(80)] }
${body}
await root.close()
process.stdout.write('survived')`
  const run = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8', timeout: 60_000 })
  t.same({ status: run.status, signal: run.signal, stdout: run.stdout }, { status: 0, signal: null, stdout: 'survived' }, what, { stderr: run.stderr })
}

t.test("the service's environment survives commits that empty pages, with nothing to reclaim", async (t) => {
  survives(t, 'a batch deleted in the transaction after the one that wrote it (a shipped funnel batch, settled bids)', `
root.transactionSync(() => { for (let i = 0; i < 2000; i++) table.putSync(i, row) })
root.transactionSync(() => { for (let i = 0; i < 2000; i++) table.removeSync(i) })`)
  survives(t, 'a batch deleted in the transaction that wrote it', `
root.transactionSync(() => {
  for (let i = 0; i < 2000; i++) table.putSync(i, row)
  for (let i = 0; i < 2000; i++) table.removeSync(i)
})`)
  survives(t, 'a log trimmed from its head while it grows at its tail, 50 rounds', `
let next = 0
for (let round = 0; round < 50; round++) {
  root.transactionSync(() => { for (let i = 0; i < 400; i++) table.putSync(next++, row) })
  root.transactionSync(() => { for (const key of table.getKeys({ end: next - 100 })) table.removeSync(key) })
}`)
})

t.test('a rolled-back transaction leaves no record shape behind that other processes cannot read', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'oohbid-store-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  // A dry run packs an auction event of a shape the table has never held, then rolls back; the same shape is then
  // committed. Before the fix the second record named a shape saved only by the rolled-back transaction.
  const script = `import { openStore } from ${JSON.stringify(store)}
const store = openStore(${JSON.stringify(dir)})
const event = (id) => ({ stage: 'auction', at: 1764000000000, screens: ['scr_1'], spot_id: 'spt_' + id, tier: 'house', competitors: 0 })
try { store.write(() => { store.funnel.putSync([1, 1], [event(1)]); throw new Error('dry run') }) } catch {}
store.write(() => store.funnel.putSync([2, 1], [event(2)]))
await store.close()
process.stdout.write('written')`
  const run = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8', timeout: 60_000 })
  t.equal(run.stdout, 'written', 'the writer ran', { stderr: run.stderr })
  const { openStore } = await import('./store.js')
  const reader = openStore(dir)
  t.teardown(() => reader.close())
  t.same([...reader.funnel.getRange()].map(({ key, value }) => [key, value]), [[[2, 1], [{ stage: 'auction', at: 1764000000000, screens: ['scr_1'], spot_id: 'spt_2', tier: 'house', competitors: 0 }]]])
})

t.test('every opener maps the environment at its full size from the start, so no thread remaps it while others read', async (t) => {
  // Before the fix the map started at 128 KB and a thread remapped it, unlocked, whenever another process had grown
  // the file: two threads doing so at once left a map smaller than its recorded size, and the process segfaulted or
  // failed every write with MDB_BAD_TXN (environmentOptions). Here another process grows the file by 64 MB.
  const dir = mkdtempSync(join(tmpdir(), 'oohbid-store-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const { open } = await import('lmdb')
  const { environmentOptions, MAP_SIZE } = await import('./store.js')
  const path = join(dir, 'oohbid.lmdb')
  const root = open({ path, ...environmentOptions({ mode: 'os', syncIntervalMs: 0 }) })
  t.teardown(() => root.close())
  const table = root.openDB<string, number>('t', { keyEncoding: 'uint32' })
  const mapSize = () => (root.getStats() as { mapSize: number }).mapSize
  t.equal(mapSize(), MAP_SIZE, 'mapped at full size when opened')
  const script = `import { open } from ${JSON.stringify(lmdb)}
import { environmentOptions } from ${JSON.stringify(store)}
const root = open({ path: ${JSON.stringify(path)}, ...environmentOptions({ mode: 'os', syncIntervalMs: 0 }) })
const table = root.openDB('t', { keyEncoding: 'uint32' })
for (let batch = 0; batch < 64; batch++) root.transactionSync(() => { for (let i = 0; i < 16; i++) table.putSync(batch * 16 + i, 'x'.repeat(64 * 1024)) })
await root.close()
process.stdout.write('grown')`
  const run = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8', timeout: 60_000 })
  t.equal(run.stdout, 'grown', 'another process grew the file by 64 MB', { stderr: run.stderr })
  root.resetReadTxn()
  t.equal(table.get(1023)?.length, 64 * 1024, 'the last value written there reads back whole')
  t.equal(mapSize(), MAP_SIZE, 'and the map was not resized to read it')
})
