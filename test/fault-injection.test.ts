import { execFileSync, spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync, readlinkSync, realpathSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { connect } from 'nats'
import t, { type Test } from 'tap'
import { natsInstalled, startNatsCluster } from '../scripts/lib/engines/nats.js'
import { clockEnv, clockUnavailable, movableClock } from '../scripts/lib/faults/clock.js'
import { netHost, netnsUnavailable } from '../scripts/lib/faults/netns.js'
import { pauseFor, processState } from '../scripts/lib/faults/pause.js'
import { relayUrls } from '../scripts/lib/faults/relay.js'
import { eventually, pause } from './helpers/eventually.js'

// The fault injectors of issue 47 (scripts/lib/faults/) on plain processes, each shown to do what the fault suite
// (test/cluster-faults*.test.ts) relies on: a stopped process does nothing and always wakes, a moved clock is moved
// by what was asked, and a namespace host reaches the engine over its veth until cut, and again once healed.

const root = fileURLToPath(new URL('../..', import.meta.url))

/** A node process that prints a dot every 10 ms, killed at the end of the test. */
function ticker (t: Test): { child: ChildProcess, dots: () => number } {
  const child = spawn(process.execPath, ['-e', 'setInterval(() => process.stdout.write("."), 10)'], { stdio: ['ignore', 'pipe', 'ignore'] })
  t.teardown(() => { child.kill('SIGKILL') })
  let dots = 0
  child.stdout!.on('data', (d: Buffer) => { dots += d.length })
  return { child, dots: () => dots }
}

t.test('pause: a process stopped with SIGSTOP does nothing until it is continued, and is continued even when the test fails meanwhile', async (t) => {
  const { child, dots } = ticker(t)
  await eventually(t, 'the ticker ticks', dots, { until: (n) => n > 5 })
  let ticked = -1
  const { stoppedMs } = await pauseFor(child.pid!, 500, async () => {
    await pause(100)
    t.equal(processState(child.pid!), 'T', 'the kernel shows it stopped')
    const before = dots()
    await pause(300)
    ticked = dots() - before
  })
  t.equal(ticked, 0, 'not a tick in 300 ms while stopped')
  t.ok(stoppedMs >= 500, `stopped ${Math.round(stoppedMs)} ms`)
  const after = dots()
  await eventually(t, 'ticks again once continued', dots, { until: (n) => n > after + 5 })
  await t.rejects(pauseFor(child.pid!, 60_000, async () => { throw new Error('the load failed') }), /the load failed/, 'a failure during the pause is thrown')
  t.not(processState(child.pid!), 'T', 'and the process was continued at once, not after the minute')
})

t.test('clock: a process started with clockEnv(60) reads the wall clock a minute ahead; a movable clock steps when moved', { skip: clockUnavailable() }, async (t) => {
  const read = (env: Record<string, string>) => Number(execFileSync(process.execPath, ['-e', 'console.log(Date.now())'], { env: { ...process.env, ...env }, encoding: 'utf8' })) - Date.now()
  const ahead = read(clockEnv(60))
  t.ok(Math.abs(ahead - 60_000) < 2000, `a minute ahead (${ahead} ms)`)
  const behind = read(clockEnv(-60))
  t.ok(Math.abs(behind + 60_000) < 2000, `a minute behind (${behind} ms)`)
  const dir = mkdtempSync(join(tmpdir(), 'oohbid-clock-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const clock = movableClock(join(dir, 'clock'))
  // The child answers each line on stdin with its Date.now(), and a timer's late-ness: monotonic time is not moved.
  const child = spawn(process.execPath, ['-e', 'let last = performance.now(); process.stdin.on("data", () => { console.log(JSON.stringify({ now: Date.now(), mono: performance.now() - last })); last = performance.now() })'], { env: { ...process.env, ...clock.env }, stdio: ['pipe', 'pipe', 'ignore'] })
  t.teardown(() => { child.kill('SIGKILL') })
  const ask = () => new Promise<{ skew: number, mono: number }>((resolve) => {
    child.stdout!.once('data', (d: Buffer) => {
      const seen = JSON.parse(d.toString()) as { now: number, mono: number }
      resolve({ skew: seen.now - Date.now(), mono: seen.mono })
    })
    child.stdin!.write('?\n')
  })
  t.ok(Math.abs((await ask()).skew) < 1000, 'on real time until moved')
  clock.move(60)
  const moved = await eventually(t, 'the clock a minute ahead once moved', ask, { within: 5000, every: 200, until: (s) => Math.abs(s.skew - 60_000) < 1000 })
  t.ok(Math.abs(moved.skew - 60_000) < 1000, `a minute ahead (${moved.skew} ms)`)
  t.ok(moved.mono < 5000, `monotonic time did not move (${Math.round(moved.mono)} ms between two reads)`)
})

t.test('netns: a process on a namespace host reaches the engine over its veth; cut, it is unreachable both ways; healed, it is back', { skip: netnsUnavailable() ?? (natsInstalled() ? undefined : 'nats-server is not installed') }, async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'oohbid-netns-'))
  const engine = await startNatsCluster(join(dir, 'engine'))
  t.teardown(async () => { await engine.stop(); rmSync(dir, { recursive: true, force: true }) })
  const host = await netHost('probe', 250)
  t.teardown(() => host.remove())
  const relayed = await relayUrls(engine.urls, host.gateway)
  t.teardown(() => relayed.close())
  t.ok(relayed.urls.every((u) => u.startsWith(`nats://${host.gateway}:`)), `the engine's members reached at ${relayed.urls.join(', ')}`)
  // In the namespace: a NATS client publishing a tick every 50 ms, and an HTTP server answering how many it sent.
  const probe = `
    import { connect } from 'nats'
    import { createServer } from 'node:http'
    const nc = await connect({ servers: process.env.URLS.split(','), reconnectTimeWait: 200, maxReconnectAttempts: -1, pingInterval: 1000, maxPingOut: 2 })
    let n = 0
    setInterval(() => nc.publish('probe.tick', String(n++)), 50)
    createServer((req, res) => res.end(String(n))).listen(8080, '0.0.0.0', () => console.log('ready'))`
  const child = spawn(host.wrap[0]!, [...host.wrap.slice(1), process.execPath, '--input-type=module', '-e', probe], { cwd: root, env: { ...process.env, URLS: relayed.urls.join(',') }, stdio: ['ignore', 'pipe', 'inherit'] })
  t.teardown(() => { child.kill('SIGKILL') })
  await new Promise<void>((resolve, reject) => {
    child.stdout!.on('data', (d: Buffer) => { if (d.toString().includes('ready')) resolve() })
    child.once('exit', (code) => reject(new Error(`the probe exited (${code})`)))
  })
  t.equal(realpathSync(readlinkSync(`/proc/${child.pid!}/exe`)), realpathSync(process.execPath), 'ip execs the program: the pid spawn gives is the program\'s own (SIGSTOP and kill -9 reach it)')
  const nc = await connect({ servers: engine.urls })
  t.teardown(() => nc.close())
  let ticks = 0
  const sub = nc.subscribe('probe.tick')
  void (async () => { for await (const _ of sub) ticks++ })()
  const web = async () => (await fetch(`http://${host.address}:8080/`, { signal: AbortSignal.timeout(1000) })).status
  const reaches = async (what: string) => {
    const before = ticks
    await eventually(t, `${what}: ticks from the namespace reach the engine`, () => ticks, { within: 20_000, every: 50, until: (n) => n > before + 5 })
    t.equal(await eventually(t, `${what}: the root namespace reaches the host`, web, { within: 20_000, every: 200, until: (s) => s === 200 }), 200, `${what}: the host's HTTP server answers from the root namespace`)
  }
  await reaches('linked')
  /** Cut one way: nothing crosses for 1.5 s (after a second for what was in flight); healed, all of it does again. */
  const cutAndHeal = async (how: 'drop' | 'down') => {
    await host.cut(how)
    await pause(1000)
    const before = ticks
    await pause(1500)
    t.equal(ticks, before, `cut (${how}): no tick reaches the engine in 1.5 s`)
    await t.rejects(web(), `cut (${how}): the host's HTTP server is unreachable`)
    await host.heal()
    await reaches(`healed after ${how}`)
  }
  for (const how of ['drop', 'down'] as const) await cutAndHeal(how)
  await host.remove()
  t.notMatch(execFileSync('ip', ['netns', 'list'], { encoding: 'utf8' }), host.name, 'the namespace is gone once removed')
  child.kill('SIGKILL')
})
