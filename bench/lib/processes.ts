import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = fileURLToPath(new URL('../../..', import.meta.url))

/** A server in its own process, so the load generator never shares its event loop. */
export interface ServerProcess {
  url: string
  child: ChildProcess
  stop (): Promise<void>
}

function waitForUrl (child: ChildProcess): Promise<string> {
  return new Promise((resolve, reject) => {
    let out = ''
    child.stdout!.on('data', (d) => {
      out += d
      const m = /listening on (\S+)/.exec(out)
      if (m) resolve(m[1]!)
    })
    child.once('exit', (code) => reject(new Error(`server exited with ${code}: ${out}`)))
  })
}

async function start (script: string, env: Record<string, string>, cleanup?: () => void, nodeArgs: string[] = []): Promise<ServerProcess> {
  const child = spawn(process.execPath, [...nodeArgs, join(root, script)], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'inherit'] })
  const url = await waitForUrl(child)
  return {
    url,
    child,
    async stop () {
      const exited = new Promise((r) => child.once('exit', r))
      child.kill('SIGTERM')
      await exited
      cleanup?.()
    }
  }
}

/** A baseline script answering body, passed through a file: a large body does not fit in the environment. */
function startAnswering (script: string, body: string | undefined, env: Record<string, string> = {}): Promise<ServerProcess> {
  if (body === undefined) return start(script, env)
  const dir = mkdtempSync(join(tmpdir(), 'oohbid-body-'))
  writeFileSync(join(dir, 'body'), body)
  return start(script, { ...env, BARE_BODY_FILE: join(dir, 'body') }, () => rmSync(dir, { recursive: true, force: true }))
}

/** The bare uWS baseline, answering body. */
export function startBare (body?: string): Promise<ServerProcess> {
  return startAnswering('dist/bench/lib/bare-uws.js', body)
}

/**
 * The durable floor (bench/lib/uws-durable.ts): uWS, the request parsed, one LMDB commit, then body. writes: 1, one put
 * (the floor), or 4, the four records a bid commits, in four tables.
 */
export function startDurable (body?: string, writes: 1 | 4 = 1): Promise<ServerProcess> {
  return startAnswering('dist/bench/lib/uws-durable.js', body, { DURABLE_WRITES: String(writes) })
}

/**
 * The engine prototype's front (bench/lib/uws-quorum.ts): the durable floor with its one write made to a replicated
 * engine (nats or postgres, members at urls), answered once a quorum holds it; each bid written alone, or a turn's together.
 */
export function startQuorumFront (engine: 'nats' | 'postgres', urls: string[], batch: 'request' | 'turn', body?: string): Promise<ServerProcess> {
  return startAnswering('dist/bench/lib/uws-quorum.js', body, { ENGINE: engine, ENGINE_URLS: urls.join(','), QUORUM_BATCH: batch })
}

/** A baseline server script of bench/lib (fastify-bid, uws-piscina). */
export function startBaseline (name: string, env: Record<string, string> = {}): Promise<ServerProcess> {
  return start(`dist/bench/lib/${name}.js`, env)
}

/**
 * oohbid as `npm start` runs it, over a fresh data directory (or the one given, which stop() then keeps);
 * BENCH_CPU_PROF=<dir> writes its CPU profile there.
 */
export function startOohbid (env: Record<string, string> = {}, existing?: string): Promise<ServerProcess & { adminToken: string, dataDir: string }> {
  const dataDir = existing ?? mkdtempSync(join(tmpdir(), 'oohbid-bench-'))
  const adminToken = 'bench-admin-token'
  const profile = process.env.BENCH_CPU_PROF
  const cleanup = existing === undefined ? () => rmSync(dataDir, { recursive: true, force: true }) : undefined
  return start('dist/src/main.js', { PORT: '0', HOST: '127.0.0.1', DATA_DIR: dataDir, ADMIN_TOKEN: adminToken, LOG_LEVEL: 'warn', DEMO_FLEET: '0', ...env }, cleanup, profile !== undefined ? ['--cpu-prof', `--cpu-prof-dir=${profile}`] : [])
    .then((p) => ({ ...p, adminToken, dataDir }))
}
