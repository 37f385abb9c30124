import { fork, type ChildProcess } from 'node:child_process'
import { createInterface } from 'node:readline'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { loadConfig } from './config.js'
import { uwsStandInReason } from './http/uws-native.js'
import { createLogger } from './log.js'
import { StartRefused } from './start-refused.js'

/**
 * Refuses to start, for a reason the operator fixes (configuration, the runtime, a port or data directory another
 * process holds): one JSON log line like every other line on stderr, no stack trace, exit 1.
 */
function refuse (message: string): never {
  createLogger('error').error(message, { event: 'start_refused' })
  process.exit(1)
}

const config = (() => {
  try {
    return loadConfig()
  } catch (err) {
    return refuse(err instanceof Error ? err.message : String(err))
  }
})()
const standIn = uwsStandInReason()
if (standIn !== undefined) refuse(standIn)
const log = createLogger(config.logLevel)
// Imported only now: importing the service loads uWebSockets.js, whose loader would print its own warnings first.
const { startService } = await import('./service.js')
const service = await startService({ config, log }).catch((err: unknown) => {
  if (!(err instanceof StartRefused)) throw err
  return refuse(err.message)
})
// The line scripts and tests wait for: the port is known only after listen when PORT=0.
process.stdout.write(`oohbid listening on ${service.url}\n`)

/**
 * DEMO_FLEET: a market that moves by itself. Simulated screens register, stream FEIN data and run headless players
 * through the public partner API and player feed, and a demo buyer bids on them, like real devices and a real DSP.
 */
const demo: ChildProcess[] = []
if (config.demoFleet > 0) {
  const scripts = join(fileURLToPath(new URL('.', import.meta.url)), '..', 'scripts')
  const start = (name: string, args: string[], env: Record<string, string> = {}): void => {
    // Their progress lines share our stdout; their stderr (a crash's stack, say) joins the JSON log, line by line.
    const child = fork(join(scripts, `${name}.js`), args, { stdio: ['ignore', 'inherit', 'pipe', 'ipc'], env: { ...process.env, ...env } })
    createInterface({ input: child.stderr!, crlfDelay: Infinity }).on('line', (text) => log.warn(`demo ${name} wrote to stderr`, { text }))
    child.on('exit', (code) => { if (code) log.warn(`demo ${name} stopped`, { code }) })
    demo.push(child)
  }
  start('simulate-fleet', ['--screens', String(config.demoFleet), '--base-url', service.url, '--state', join(config.dataDir, 'demo-fleet.json')])
  start('demo-buyer', ['--base-url', service.url, '--state', join(config.dataDir, 'demo-buyer.json')], { ADMIN_TOKEN: service.adminToken })
}

for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.once(signal, () => {
    log.info('shutting down', { signal })
    for (const child of demo) child.kill('SIGTERM')
    service.close().then(() => process.exit(0), (err: unknown) => {
      log.error('shutdown failed', { error: String(err) })
      process.exit(1)
    })
  })
}
