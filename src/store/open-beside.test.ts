import { spawn } from 'node:child_process'
import { mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { Worker } from 'node:worker_threads'
import { join } from 'node:path'
import t from 'tap'
import { holdWritesFor } from './open-beside.js'
import { openStore } from './store.js'

const beside = new URL('./open-beside.js', import.meta.url).href
const storeModule = new URL('./store.js', import.meta.url).href

/** A process that opens the environment as the analytics process does: read-only, once the owner holds its writers. */
function opener (dataDir: string) {
  const script = `
    import { openWhenHeld } from ${JSON.stringify(beside)}
    import { openStore } from ${JSON.stringify(storeModule)}
    const store = await openWhenHeld(${JSON.stringify(dataDir)}, () => process.send('opening'), () => openStore(${JSON.stringify(dataDir)}, undefined, undefined, { readOnly: true }), (why) => console.error(why))
    process.send({ counter: store.meta.get('counter') })
    await store.close()
    process.disconnect()
  `
  return spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'ignore', 'pipe', 'ipc'] })
}

/** A hot thread of the owner: commits without a pause until told to stop, counting commits and failures. */
function writer (dataDir: string, shared: Int32Array): Worker {
  const script = `
    import { parentPort, workerData } from 'node:worker_threads'
    import { openStore } from ${JSON.stringify(storeModule)}
    const [counts, dir] = workerData
    const store = openStore(dir)
    while (Atomics.load(counts, 0) === 0) {
      try {
        store.write(() => {
          store.meta.putSync('counter', Atomics.load(counts, 1) + 1)
          store.meta.putSync('filler-' + (Atomics.load(counts, 1) % 2000), 'x'.repeat(200))
        })
        Atomics.add(counts, 1, 1)
      } catch (err) {
        if (Atomics.add(counts, 2, 1) === 0) parentPort.postMessage(String(err?.stack ?? err))
      }
    }
    await store.close()
  `
  return new Worker(new URL(`data:text/javascript,${encodeURIComponent(script)}`), { workerData: [shared, dataDir] })
}

t.test('other processes open the environment beside a thread committing without a pause, and every commit lands', async (t) => {
  const dataDir = mkdtempSync(join(tmpdir(), 'oohbid-open-beside-'))
  const store = openStore(dataDir)
  t.teardown(async () => { await store.close(); rmSync(dataDir, { recursive: true, force: true }) })
  // [stop, commits, failures]
  const counts = new Int32Array(new SharedArrayBuffer(12))
  const thread = writer(dataDir, counts)
  let firstFailure = ''
  thread.on('message', (m: string) => { firstFailure = m })
  const stopped = new Promise((resolve) => thread.once('exit', resolve))
  const OPENERS = 20
  let held = 0
  let stderr = ''
  for (let i = 0; i < OPENERS; i++) {
    const child = opener(dataDir)
    child.stderr!.on('data', (chunk: Buffer) => { stderr += chunk.toString() })
    child.on('message', (m) => { if (m === 'opening' && holdWritesFor((fn) => store.write(fn), dataDir, child.pid!)) held++ })
    await new Promise((resolve) => child.once('exit', resolve))
  }
  Atomics.store(counts, 0, 1)
  await stopped
  const commits = Atomics.load(counts, 1)
  t.equal(stderr, '', 'no opener waited in vain or failed')
  t.equal(held, OPENERS, 'each opened while the writers were held')
  t.equal(Atomics.load(counts, 2), 0, `no commit failed: ${commits} commits${firstFailure === '' ? '' : `; the first failure: ${firstFailure}`}`)
  store.refresh()
  t.equal(store.meta.get('counter'), commits, 'and each one landed')
  t.same(readdirSync(dataDir).filter((f) => f.startsWith('.open-')), [], 'the handshake leaves no file behind')
})
