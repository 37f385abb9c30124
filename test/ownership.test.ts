import { spawn } from 'node:child_process'
import { existsSync, mkdtempSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { claimPort } from '../src/http/server.js'
import { lockDataDir } from '../src/store/data-dir-lock.js'
import { reason, refusedStart, startProcess } from './helpers/process.js'

// One owner per data directory and per port: a second `npm start` refuses to start with a clear message instead of
// sharing the port (SO_REUSEPORT) and the LMDB file with the first.

const dir = (name: string) => mkdtempSync(join(tmpdir(), `oohbid-own-${name}-`))

t.test('a second service on the same data directory or port refuses to start, and the first keeps serving', async (t) => {
  const dataDir = dir('a')
  const first = await startProcess(dataDir)
  t.teardown(() => { first.child.kill('SIGKILL') })
  const port = new URL(first.url).port

  const sameBoth = await refusedStart(dataDir, { PORT: port })
  t.equal(sameBoth.code, 1, 'same DATA_DIR and PORT: exits 1')
  t.match(reason(sameBoth), new RegExp(`^DATA_DIR ${dataDir} is in use by another oohbid process \\(pid ${first.child.pid}\\); stop it first`))
  t.notMatch(sameBoth.stderr, /\n\s+at /, 'no stack trace')

  const sameDir = await refusedStart(dataDir, { PORT: '0' })
  t.equal(sameDir.code, 1, 'same DATA_DIR on another port: exits 1')
  t.match(reason(sameDir), /DATA_DIR .* is in use by another oohbid process/)

  const samePort = await refusedStart(dir('b'), { PORT: port })
  t.equal(samePort.code, 1, 'another DATA_DIR on the same port: exits 1')
  t.match(reason(samePort), new RegExp(`^Port ${port} on 127.0.0.1 is in use by another process`))

  const health = await fetch(`${first.url}/healthz`)
  t.equal(health.status, 200, 'the first service still serves')
})

t.test('the lock dies with its process: a kill -9 frees the data directory at once', async (t) => {
  const dataDir = dir('c')
  const first = await startProcess(dataDir)
  first.child.kill('SIGKILL')
  await new Promise((resolve) => first.child.once('exit', resolve))
  const second = await startProcess(dataDir)
  t.teardown(() => { second.child.kill('SIGKILL') })
  t.equal((await fetch(`${second.url}/healthz`)).status, 200, 'a new service owns the directory')
})

t.test('the socket-file lock (platforms without abstract sockets) refuses a live owner and replaces a dead one', async (t) => {
  const dataDir = dir('d')
  const lock = await lockDataDir(dataDir, false)
  await t.rejects(lockDataDir(dataDir, false), { name: 'StartRefused', message: new RegExp(`pid ${process.pid}\\)`) }, 'a live owner is refused')
  await lock.release()
  t.notOk(existsSync(join(dataDir, '.owner.sock')), 'release removes the socket file')

  // A dead owner leaves its socket file behind: nobody answers on it.
  const script = `require('net').createServer().listen(${JSON.stringify(join(dataDir, '.owner.sock'))}, () => process.stdout.write('up'))`
  const dead = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'inherit'] })
  await new Promise((resolve) => dead.stdout.once('data', resolve))
  dead.kill('SIGKILL')
  await new Promise((resolve) => dead.once('exit', resolve))
  t.ok(existsSync(join(dataDir, '.owner.sock')), 'the dead owner left its file')
  const taken = await lockDataDir(dataDir, false)
  await t.rejects(lockDataDir(dataDir, false), { name: 'StartRefused' }, 'a stale socket file is replaced: the new owner holds the lock')
  await taken.release()

  const linux = await lockDataDir(dataDir)
  await t.rejects(lockDataDir(join(dataDir, '.'), true), { name: 'StartRefused' }, 'another spelling of the same directory is the same lock')
  await linux.release()
})

t.test('a port is held from the moment it is taken: no other service can be handed it while the hot threads start', async (t) => {
  const claimed = await claimPort('127.0.0.1', 0)
  const bind = () => new Promise<string>((resolve) => {
    const probe = createServer()
    probe.once('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? 'error'))
    probe.listen({ host: '127.0.0.1', port: claimed.port, exclusive: true }, () => probe.close(() => resolve('bound')))
  })
  t.equal(await bind(), 'EADDRINUSE', 'another bind of the port fails while it is held')
  const early = await fetch(`http://127.0.0.1:${claimed.port}/healthz`)
  t.equal(early.status, 503, 'a client that connects meanwhile is told to retry')
  t.equal(early.headers.get('retry-after'), '1')
  t.match(await early.json(), { error_code: 'service_unavailable' })
  claimed.release()
  t.equal(await bind(), 'bound', 'let go, the port is free again')
})
