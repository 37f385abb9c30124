import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { connect } from 'nats'
import { findBinary, freePort, member, readyOrStopped, stopAll, until, type LocalEngine } from './local.js'

/** Whether Debian's nats-server is installed. */
export function natsInstalled (): boolean {
  return findBinary('nats-server') !== undefined
}

/**
 * A NATS JetStream cluster of `size` members on loopback (Debian's nats-server 2.9), each with its own store under
 * dir. JetStream replicates a stream with RAFT: a publish is acknowledged once a majority of its replicas hold it.
 */
export async function startNatsCluster (dir: string, size = 3): Promise<LocalEngine> {
  const ports = await Promise.all(Array.from({ length: size }, async () => ({ client: await freePort(), route: await freePort() })))
  const children = ports.map(({ client, route }, i) => {
    const home = join(dir, `nats-${i + 1}`)
    mkdirSync(home, { recursive: true })
    const routes = ports.filter((_, j) => j !== i).map((p) => `nats-route://127.0.0.1:${p.route}`)
    writeFileSync(join(home, 'nats.conf'), [
      `server_name: n${i + 1}`,
      `listen: 127.0.0.1:${client}`,
      `jetstream { store_dir: "${home}", max_memory_store: 256MB, max_file_store: 8GB }`,
      `cluster { name: oohbid, listen: 127.0.0.1:${route}, routes: [${routes.join(', ')}] }`
    ].join('\n'))
    return member('nats-server', ['-c', join(home, 'nats.conf')])
  })
  const urls = ports.map((p) => `nats://127.0.0.1:${p.client}`)
  const engine: LocalEngine = { name: 'nats', urls, members: () => children.map((c, i) => ({ name: `n${i + 1}`, pid: c.pid! })), stop: () => stopAll(children) }
  // Ready once the cluster has elected its JetStream meta leader: until then stream requests fail.
  return readyOrStopped(engine, children, () => until(async () => {
    const nc = await connect({ servers: urls })
    try {
      await (await nc.jetstreamManager()).getAccountInfo()
    } finally {
      await nc.close()
    }
  }, 30_000, 'NATS JetStream cluster'))
}
