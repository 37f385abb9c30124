import { fork, type ChildProcess } from 'node:child_process'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { loadConfig } from './config.js'
import { createLogger } from './log.js'
import { startService } from './service.js'
import { StartRefused } from './start-refused.js'

const config = (() => {
  try {
    return loadConfig()
  } catch (err) {
    // A configuration mistake is the operator's to fix: say what it is, without a stack trace.
    process.stderr.write(`oohbid: ${err instanceof Error ? err.message : String(err)}\n`)
    process.exit(1)
  }
})()
const log = createLogger(config.logLevel)
const service = await startService({ config, log }).catch((err: unknown) => {
  if (!(err instanceof StartRefused)) throw err
  process.stderr.write(`oohbid: ${err.message}\n`)
  process.exit(1)
})
// The line scripts and tests wait for: the port is known only after listen when PORT=0.
process.stdout.write(`oohbid listening on ${service.url}\n`)

/** DEMO_FLEET: simulated screens that register and stream through the public partner API, like real devices. */
let fleet: ChildProcess | undefined
if (config.demoFleet > 0) {
  const script = join(fileURLToPath(new URL('.', import.meta.url)), '..', 'scripts', 'simulate-fleet.js')
  fleet = fork(script, ['--screens', String(config.demoFleet), '--base-url', service.url, '--state', join(config.dataDir, 'demo-fleet.json')], { stdio: 'inherit' })
  fleet.on('exit', (code) => { if (code) log.warn('demo fleet stopped', { code }) })
}

for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.once(signal, () => {
    log.info('shutting down', { signal })
    fleet?.kill('SIGTERM')
    service.close().then(() => process.exit(0), (err: unknown) => {
      log.error('shutdown failed', { error: String(err) })
      process.exit(1)
    })
  })
}
