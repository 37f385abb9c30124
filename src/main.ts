import { loadConfig } from './config.js'
import { startDemoMarket } from './demo-market.js'
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

// DEMO_FLEET: simulated screens and a demo buyer, through the public API of this node (src/demo-market.ts).
const demo = config.demoFleet > 0
  ? startDemoMarket({
    baseUrl: service.url,
    screens: config.demoFleet,
    stateDir: config.dataDir,
    adminToken: service.adminToken,
    onStderr: (name, text) => log.warn(`demo ${name} wrote to stderr`, { text }),
    onExit: (name, code) => { if (code) log.warn(`demo ${name} stopped`, { code }) }
  })
  : []

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
