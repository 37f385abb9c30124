import { execFileSync, spawnSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { freePort } from '../scripts/lib/engines/local.js'
import { eventually } from './helpers/eventually.js'
import { required } from './helpers/required.js'

// When the process dies anyway (an abort in native code, the OOM killer), the service is back without a person: the
// supervisors deploy/ ships restart it. PM2 runs here as it runs in production (its daemon, the shipped config); the
// systemd unit is checked by systemd itself where systemd-analyze is installed (no systemd runs as PID 1 here), and
// skipped, saying so, where it is not.

const root = fileURLToPath(new URL('../..', import.meta.url))
const pm2 = join(root, 'node_modules', '.bin', 'pm2')

async function healthy (url: string): Promise<boolean> {
  try {
    return (await fetch(`${url}/healthz`, { signal: AbortSignal.timeout(1000) })).ok
  } catch {
    return false
  }
}

t.test('PM2 with deploy/pm2.config.cjs starts oohbid again after kill -9 of its main process', async (t) => {
  const home = mkdtempSync(join(tmpdir(), 'oohbid-pm2-'))
  const port = await freePort()
  const url = `http://127.0.0.1:${port}`
  const env = { ...process.env, PM2_HOME: join(home, 'pm2'), PORT: String(port), HOST: '127.0.0.1', DATA_DIR: join(home, 'data'), BASE_URL: url, ADMIN_TOKEN: 'supervised', LOG_LEVEL: 'warn' }
  const run = (...args: string[]) => execFileSync(pm2, args, { env, cwd: root, encoding: 'utf8' })
  t.teardown(() => {
    spawnSync(pm2, ['kill'], { env, cwd: root })
    rmSync(home, { recursive: true, force: true })
  })
  run('start', join(root, 'deploy', 'pm2.config.cjs'))
  const app = () => (JSON.parse(run('jlist')) as Array<{ name: string, pid: number, pm2_env: { restart_time: number, status: string } }>).find((a) => a.name === 'oohbid')!
  await eventually(t, 'oohbid answered /healthz under PM2', () => healthy(url), { within: 60_000, every: 100 })
  const first = app()
  t.match(first, { pid: Number, pm2_env: { status: 'online', restart_time: 0 } })

  process.kill(first.pid, 'SIGKILL')
  await eventually(t, 'PM2 started oohbid again', async () => app().pid !== first.pid && app().pid > 0 && await healthy(url), { within: 60_000, every: 100 })
  const second = app()
  t.not(second.pid, first.pid, 'a new main process')
  t.equal(second.pm2_env.restart_time, 1, 'PM2 counted one restart')
  t.equal((await fetch(`${url}/healthz`)).status, 200, 'and it serves on the same port, over the same data directory')
  const ready = await (await fetch(`${url}/readyz`)).json() as { data: { checks: { store: string } } }
  t.equal(ready.data.checks.store, 'ok')
})

t.test('the systemd unit restarts always; the image checks liveness', async (t) => {
  const unit = readFileSync(join(root, 'deploy', 'oohbid.service'), 'utf8')
  t.match(unit, /^Restart=always$/m)
  t.match(unit, /^StartLimitIntervalSec=0$/m, 'never stops restarting')
  t.match(unit, /^ExecStart=\/usr\/bin\/node dist\/src\/main\.js$/m)
  const dockerfile = readFileSync(join(root, 'Dockerfile'), 'utf8')
  t.match(dockerfile, /^HEALTHCHECK .*\/healthz/m, 'the image probes /healthz')
  t.match(readFileSync(join(root, 'deploy', 'docker-compose.yml'), 'utf8'), /^\s+restart: unless-stopped$/m, 'and compose restarts it')
})

const analyzer = spawnSync('systemd-analyze', ['--version']).error === undefined
t.test('systemd itself accepts the unit (systemd-analyze verify)', { skip: analyzer || required('systemd') ? false : 'systemd-analyze is not installed (apt-get install systemd)' }, async (t) => {
  const analyze = spawnSync('systemd-analyze', ['verify', join(root, 'deploy', 'oohbid.service')], { encoding: 'utf8' })
  t.equal(analyze.status, 0, `systemd-analyze verify: ${analyze.error?.message ?? analyze.stderr}`)
})
