import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { connect } from 'nats'
import { findBinary, freePort, member, readyOrStopped, stopAll, until, type LocalEngine } from './local.js'

/** Whether Debian's nats-server is installed. */
export function natsInstalled (): boolean {
  return findBinary('nats-server') !== undefined
}

/** A local NATS cluster whose members a test can kill and start again. */
export interface NatsEngine extends LocalEngine {
  /** Starts a stopped (killed) member again with its store and ports; resolves once it serves clients. */
  restart (name: string): Promise<void>
  /** The member that leads a stream now (a KV bucket's stream is `KV_<bucket>`): the one whose loss costs an election. */
  leaderOf (stream: string): Promise<{ name: string, pid: number }>
}

/**
 * A NATS JetStream cluster of `size` members on loopback (Debian's nats-server 2.9), each with its own store under
 * dir. JetStream replicates a stream with RAFT: a publish is acknowledged once a majority of its replicas hold it.
 */
export async function startNatsCluster (dir: string, size = 3): Promise<NatsEngine> {
  const ports = await Promise.all(Array.from({ length: size }, async () => ({ client: await freePort(), route: await freePort() })))
  const configs = ports.map(({ client, route }, i) => {
    const home = join(dir, `nats-${i + 1}`)
    mkdirSync(home, { recursive: true })
    const routes = ports.filter((_, j) => j !== i).map((p) => `nats-route://127.0.0.1:${p.route}`)
    writeFileSync(join(home, 'nats.conf'), [
      `server_name: n${i + 1}`,
      `listen: 127.0.0.1:${client}`,
      `log_file: "${join(home, 'nats.log')}"`,
      `jetstream { store_dir: "${home}", max_memory_store: 256MB, max_file_store: 8GB }`,
      `cluster { name: oohbid, listen: 127.0.0.1:${route}, routes: [${routes.join(', ')}] }`
    ].join('\n'))
    return join(home, 'nats.conf')
  })
  const children = configs.map((config) => member('nats-server', ['-c', config]))
  const urls = ports.map((p) => `nats://127.0.0.1:${p.client}`)
  const engine: NatsEngine = {
    name: 'nats',
    urls,
    members: () => children.map((c, i) => ({ name: `n${i + 1}`, pid: c.pid! })),
    stop: () => stopAll(children),
    async restart (name) {
      const i = Number(name.slice(1)) - 1
      const old = children[i]!
      if (old.exitCode === null && old.signalCode === null) throw new Error(`${name} is still running`)
      children[i] = member('nats-server', ['-c', configs[i]!])
      await until(async () => { await (await connect({ servers: urls[i]!, reconnect: false })).close() }, 30_000, `NATS member ${name}`)
    },
    async leaderOf (stream) {
      const nc = await connect({ servers: urls })
      try {
        const leader = (await (await nc.jetstreamManager()).streams.info(stream)).cluster?.leader
        const found = engine.members().find((m) => m.name === leader)
        if (found === undefined) throw new Error(`stream ${stream} has no leader now`)
        return found
      } finally {
        await nc.close()
      }
    }
  }
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
