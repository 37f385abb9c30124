// Burst: issue 25's trial, BURST_RUNS times (default 20). Each run starts the service as `npm start` does (its demo
// fleet of BURST_FLEET screens, default 50, stdout and stderr to one log), sets up an approved seat about 30 s after
// the start, sends 8 s of POST /openrtb/v2/bid at c=50 (-p 1), and reads the log. The old writable map aborted the
// process in about half of such runs. Prints a line a run and the counts; exits 1 unless every run ended with the
// service alive, no abort and no analytics restart.
import { spawn } from 'node:child_process'
import { mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import autocannon from 'autocannon'
import { acceptedBid } from './lib/bid-fixture.js'

const RUNS = Number(process.env.BURST_RUNS ?? 20)
const main = fileURLToPath(new URL('../src/main.js', import.meta.url))
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

interface Run { died: string | undefined, bids: number, non2xx: number, errors: number, aborted: boolean, analyticsRestarts: number }

async function once (n: number): Promise<Run> {
  const dir = mkdtempSync(join(tmpdir(), 'oohbid-burst-'))
  const log = join(dir, 'log')
  const port = 20_000 + Math.floor(Math.random() * 20_000)
  const url = `http://127.0.0.1:${port}`
  const out = openSync(log, 'a')
  const child = spawn(process.execPath, [main], { env: { ...process.env, PORT: String(port), HOST: '127.0.0.1', DATA_DIR: join(dir, 'data'), ADMIN_TOKEN: 'burst', DEMO_FLEET: process.env.BURST_FLEET ?? '50' }, stdio: ['ignore', out, out] })
  let died: string | undefined
  child.once('exit', (code, signal) => { died = `code ${code}, signal ${signal}` })
  const started = Date.now()
  while (died === undefined) {
    if (await fetch(`${url}/healthz`).then((r) => r.ok, () => false)) break
    await sleep(200)
  }
  await sleep(Math.max(0, 25_000 - (Date.now() - started)))
  const { key, body } = await acceptedBid({ url, adminToken: 'burst' })
  const r = await autocannon({ url: `${url}/openrtb/v2/bid`, method: 'POST', connections: 50, pipelining: 1, duration: 8, headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body })
  await sleep(3000)
  const text = readFileSync(log, 'utf8')
  const run: Run = { died, bids: r.requests.total, non2xx: r.non2xx, errors: r.errors, aborted: /Assertion .* failed|Aborted/.test(text), analyticsRestarts: (text.match(/analytics process exited; restarting/g) ?? []).length }
  console.log(`run ${n}: ${JSON.stringify(run)}`)
  if (died === undefined) {
    child.kill('SIGTERM')
    await new Promise((resolve) => child.once('exit', resolve))
  }
  if (run.died === undefined && !run.aborted && run.analyticsRestarts === 0) rmSync(dir, { recursive: true, force: true })
  else console.log(`  its log is kept in ${log}`)
  return run
}

const runs: Run[] = []
for (let n = 1; n <= RUNS; n++) runs.push(await once(n))
const alive = runs.filter((r) => r.died === undefined).length
const restarts = runs.reduce((n, r) => n + r.analyticsRestarts, 0)
const aborted = runs.filter((r) => r.aborted).length
console.log(`burst: ${RUNS} runs, ${alive} ended with the service alive, ${aborted} with an abort, ${restarts} analytics restarts; bids per run ${Math.min(...runs.map((r) => r.bids))}-${Math.max(...runs.map((r) => r.bids))}, ${runs.reduce((n, r) => n + r.non2xx, 0)} non-2xx, ${runs.reduce((n, r) => n + r.errors, 0)} errors`)
if (alive < RUNS || aborted > 0 || restarts > 0) process.exitCode = 1
