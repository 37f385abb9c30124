import { join, resolve } from 'node:path'
import { parseArgs } from 'node:util'
import { loadConfig } from '../src/config.js'
import { startDemoMarket } from '../src/demo-market.js'
import { startLocalCluster } from './lib/cluster.js'

/**
 * `npm run cluster -- --nodes 3`: oohbid on several nodes on this machine (README, "Several nodes"). Starts a NATS
 * JetStream cluster of three members, the nodes and HAProxy in front, prints one JSON line with front_url and each
 * node's url and pid, and stops everything on SIGINT or SIGTERM. It reads npm start's environment (ADMIN_TOKEN,
 * HOT_THREADS, LOG_LEVEL, DATA_DIR, DEMO_FLEET: one demo market, run against the front...); PORT is the front's.
 */
const { values: args } = parseArgs({
  options: {
    nodes: { type: 'string', default: '3' },
    'data-dir': { type: 'string' }
  }
})
const nodes = Number(args.nodes)
if (!Number.isInteger(nodes) || nodes < 1 || nodes > 16) {
  process.stderr.write(`--nodes must be an integer from 1 to 16, got "${args.nodes}"\n`)
  process.exit(2)
}
// npm start's environment, read and checked as npm start reads it.
const config = (() => {
  try {
    return loadConfig()
  } catch (err) {
    process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`)
    return process.exit(2)
  }
})()
const dir = resolve(args['data-dir'] ?? join(config.dataDir, 'cluster'))
const frontPort = config.port
const cluster = await startLocalCluster({ nodes, dir, frontPort, env: { ...process.env, HOT_THREADS: process.env.HOT_THREADS ?? '1' } }).catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`)
  process.exit(1)
})
process.stdout.write(`${JSON.stringify({ front_url: cluster.frontUrl, admin_token_file: join(dir, 'cluster-secrets.json'), engine: cluster.engine.urls, nodes: cluster.nodes.map((n) => ({ id: n.id, url: n.url, pid: n.pid, log: join(n.dataDir, 'node.log') })) })}\n`)
// One demo market, run here against the front; the nodes start without one of their own.
const demo = config.demoFleet > 0
  ? startDemoMarket({
    baseUrl: cluster.frontUrl,
    screens: config.demoFleet,
    stateDir: dir,
    adminToken: cluster.adminToken,
    onStderr: (name, text) => process.stderr.write(`demo ${name}: ${text}\n`),
    onExit: (name, code) => { if (code) process.stderr.write(`demo ${name} stopped (${code})\n`) }
  })
  : []
let stopping = false
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    if (stopping) return
    stopping = true
    for (const child of demo) child.kill('SIGTERM')
    cluster.stop().then(() => process.exit(0), (err: unknown) => {
      process.stderr.write(`stopping the cluster failed: ${String(err)}\n`)
      process.exit(1)
    })
  })
}
