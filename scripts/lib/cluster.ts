import { spawn, type ChildProcess } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { createWriteStream, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { findBinary, freePort, stopAll, until } from './engines/local.js'
import { natsInstalled, startNatsCluster, type NatsEngine } from './engines/nats.js'

const root = fileURLToPath(new URL('../../..', import.meta.url))

/** One oohbid node of a local cluster: its own process, data directory and port. */
export interface ClusterNodeProcess {
  id: string
  url: string
  dataDir: string
  /** The running process's pid (undefined while it is down). */
  readonly pid: number | undefined
  /** Sends a signal (kill -9 for the node-loss test) and waits for the process to exit. */
  kill (signal?: NodeJS.Signals): Promise<void>
  /** Starts the node again on its port and data directory (a killed node rejoining); resolves once it listens. */
  start (): Promise<void>
}

/** A local cluster: the engine's members, the nodes, and HAProxy in front. */
export interface LocalCluster {
  frontUrl: string
  adminToken: string
  engine: NatsEngine
  nodes: ClusterNodeProcess[]
  /**
   * Starts one more node on a fresh data directory, joining the running cluster (it reads the engine's current state
   * before it serves). HAProxy keeps the nodes it started with: the new one is reached at its own url.
   */
  join (): Promise<ClusterNodeProcess>
  stop (): Promise<void>
}

/** Whether this machine can run a local cluster: the engine and the load balancer from Debian. */
export function clusterInstalled (): string | undefined {
  if (!natsInstalled()) return 'nats-server is not installed (apt-get install nats-server)'
  if (findBinary('haproxy', ['/usr/sbin']) === undefined) return 'haproxy is not installed (apt-get install haproxy)'
  return undefined
}

export interface LocalClusterOptions {
  nodes: number
  /** Everything lives under here: the engine's members, each node's DATA_DIR, HAProxy's config, the logs. */
  dir: string
  /** The port HAProxy listens on (0: a free one). */
  frontPort: number
  /** The environment every node starts with (npm start's own: ADMIN_TOKEN, HOT_THREADS, LOG_LEVEL...). */
  env: Record<string, string | undefined>
  /**
   * What differs for one node, by its id (node-1...), asked before it first starts (issue 47's faults,
   * scripts/lib/faults/launch.ts): a command prefix (`ip netns exec <ns>`), environment over env (a moved clock's
   * LD_PRELOAD and FAKETIME, the engine's urls as relayed to a namespace), and the address it listens on and is
   * reached at (default 127.0.0.1).
   */
  launch?: (id: string, engine: NatsEngine) => Promise<NodeLaunch | undefined> | NodeLaunch | undefined
}

/** How one node is launched (LocalClusterOptions.launch). */
export interface NodeLaunch {
  wrap?: string[]
  env?: Record<string, string>
  host?: string
}

/**
 * Starts a NATS JetStream cluster of three members, `nodes` oohbid nodes on loopback ports, each with its own data
 * directory and CLUSTER_NODE_ID, and HAProxy in front of them (deploy/haproxy.cfg). The secrets every node must
 * share (ADMIN_TOKEN, KEY_ENCRYPTION_KEY) come from env, else are generated once into dir and reused.
 */
export async function startLocalCluster (options: LocalClusterOptions): Promise<LocalCluster> {
  const missing = clusterInstalled()
  if (missing !== undefined) throw new Error(missing)
  const { dir } = options
  mkdirSync(dir, { recursive: true })
  const secrets = sharedSecrets(dir, options.env)
  const engine = await startNatsCluster(join(dir, 'engine'))
  const nodes: ClusterNodeProcess[] = []
  let haproxy: ChildProcess | undefined
  const stop = async () => {
    if (haproxy !== undefined) await stopAll([haproxy])
    await Promise.all(nodes.map((n) => n.kill('SIGTERM')))
    await engine.stop()
  }
  try {
    const frontPort = options.frontPort === 0 ? await freePort() : options.frontPort
    const frontUrl = `http://127.0.0.1:${frontPort}`
    const node = async (i: number): Promise<ClusterNodeProcess> => {
      const id = `node-${i}`
      const launch = (await options.launch?.(id, engine)) ?? {}
      const host = launch.host ?? '127.0.0.1'
      return nodeProcess(id, host, await freePort(), join(dir, id), {
        ...options.env,
        ...secrets,
        HOST: host,
        BASE_URL: frontUrl,
        TRUST_PROXY: '127.0.0.1',
        CLUSTER_NATS_URLS: engine.urls.join(','),
        CLUSTER_NODE_ID: id,
        // One demo market runs against the front (scripts/cluster.ts), not one a node.
        DEMO_FLEET: '0',
        ...launch.env
      }, launch.wrap ?? [])
    }
    for (let i = 1; i <= options.nodes; i++) nodes.push(await node(i))
    await Promise.all(nodes.map((n) => n.start()))
    const config = join(dir, 'haproxy.cfg')
    writeFileSync(config, haproxyConfig(frontPort, nodes))
    haproxy = spawn(findBinary('haproxy', ['/usr/sbin'])!, ['-db', '-f', config], { stdio: ['ignore', 'ignore', 'pipe'] })
    let said = ''
    haproxy.stderr!.on('data', (d: Buffer) => { said = (said + d.toString()).slice(-4000) })
    const proxy = haproxy
    await until(async () => {
      if (proxy.exitCode !== null) throw new Error(`haproxy exited: ${said}`)
      const res = await fetch(`${frontUrl}/readyz`)
      if (res.status !== 200) throw new Error(`front answered ${res.status}`)
    }, 20_000, 'HAProxy in front of the nodes')
    const joinOne = async (): Promise<ClusterNodeProcess> => {
      const joining = await node(nodes.length + 1)
      nodes.push(joining)
      await joining.start()
      return joining
    }
    return { frontUrl, adminToken: secrets.ADMIN_TOKEN, engine, nodes, join: joinOne, stop }
  } catch (err) {
    await stop()
    throw err
  }
}

/** deploy/haproxy.cfg with this cluster's front port and nodes in place of the example's. */
export function haproxyConfig (frontPort: number, nodes: Array<{ id: string, url: string }>): string {
  const example = readFileSync(join(root, 'deploy', 'haproxy.cfg'), 'utf8')
  const routes = nodes.flatMap((n) => [`  use-server ${n.id} if { urlp(cursor) -m beg ${n.id}. }`, `  use-server ${n.id} if { urlp(node) -m str ${n.id} }`]).join('\n')
  const servers = nodes.map((n) => `  server ${n.id} ${new URL(n.url).host} check`).join('\n')
  return example
    .replace(/^ {2}bind .*$/m, `  bind 127.0.0.1:${frontPort}`)
    .replace(/(^ {2}use-server .*\n?)+/m, `${routes}\n`)
    .replace(/(^ {2}server .*\n?)+/gm, `${servers}\n`)
}

/** ADMIN_TOKEN and KEY_ENCRYPTION_KEY as env gives them, else as generated into dir the first time. */
function sharedSecrets (dir: string, env: Record<string, string | undefined>): { ADMIN_TOKEN: string, KEY_ENCRYPTION_KEY: string } {
  const file = join(dir, 'cluster-secrets.json')
  const kept = existsSync(file) ? JSON.parse(readFileSync(file, 'utf8')) as { ADMIN_TOKEN: string, KEY_ENCRYPTION_KEY: string } : undefined
  const secrets = {
    ADMIN_TOKEN: env.ADMIN_TOKEN ?? kept?.ADMIN_TOKEN ?? `oohb_admin_${randomBytes(24).toString('base64url')}`,
    KEY_ENCRYPTION_KEY: env.KEY_ENCRYPTION_KEY ?? kept?.KEY_ENCRYPTION_KEY ?? randomBytes(32).toString('hex')
  }
  writeFileSync(file, JSON.stringify(secrets), { mode: 0o600 })
  return secrets
}

/** A node as users run one (node dist/src/main.js), its log appended to DATA_DIR/node.log. */
function nodeProcess (id: string, host: string, port: number, dataDir: string, env: Record<string, string | undefined>, wrap: string[]): ClusterNodeProcess {
  let child: ChildProcess | undefined
  mkdirSync(dataDir, { recursive: true })
  return {
    id,
    url: `http://${host}:${port}`,
    dataDir,
    get pid () { return child?.exitCode === null && child.signalCode === null ? child.pid : undefined },
    async kill (signal = 'SIGTERM') {
      const running = child
      if (running === undefined || running.exitCode !== null || running.signalCode !== null) return
      const exited = new Promise((resolve) => running.once('exit', resolve))
      running.kill(signal)
      await exited
    },
    start () {
      const log = createWriteStream(join(dataDir, 'node.log'), { flags: 'a' })
      // A wrap must exec the node (ip netns exec does), so that pid, kill and SIGSTOP reach the node itself.
      const [command, ...args] = [...wrap, process.execPath, join(root, 'dist', 'src', 'main.js')]
      const started = spawn(command!, args, {
        env: { ...env, PORT: String(port), DATA_DIR: dataDir },
        stdio: ['ignore', 'pipe', 'pipe']
      })
      child = started
      started.stderr!.pipe(log)
      // The last of what it said, for the error when it does not start: CI keeps no data directories.
      let said = ''
      started.stderr!.on('data', (d: Buffer) => { said = (said + d.toString()).slice(-2000) })
      return new Promise((resolve, reject) => {
        let out = ''
        started.stdout!.on('data', (d: Buffer) => {
          out += d.toString()
          log.write(d)
          if (out.includes('listening on')) resolve()
        })
        started.once('exit', (code, signal) => reject(new Error(`${id} exited (${code ?? signal}) before it listened; see ${join(dataDir, 'node.log')}, which ends: ${said}`)))
      })
    }
  }
}
