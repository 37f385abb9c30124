import { loadConfig } from './config.js'
import { createLogger } from './log.js'
import { startService } from './service.js'

const config = loadConfig()
const log = createLogger(config.logLevel)
const service = await startService({ config, log })
// The line scripts and tests wait for: the port is known only after listen when PORT=0.
process.stdout.write(`oohbid listening on ${service.url}\n`)

for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.once(signal, () => {
    log.info('shutting down', { signal })
    service.close().then(() => process.exit(0), (err: unknown) => {
      log.error('shutdown failed', { error: String(err) })
      process.exit(1)
    })
  })
}
