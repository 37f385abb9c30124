import { randomBytes } from 'node:crypto'
import type { ClusterConfig } from '../config.js'
import type { Logger } from '../log.js'
import type { Store } from '../store/store.js'
import { ChangeApplier } from './applier.js'
import { connectEngine } from './engine.js'
import { ChangeShipper } from './shipper.js'
import type { ShippedChanges } from './shipped.js'
import { claimKey } from './unique-names.js'

/** This node's part in a cluster, run by the supervisor. */
export interface ClusterNode {
  /** Ships what the hot threads recorded (they say so after each commit that recorded changes). */
  kick (): void
  /** Claims a name cluster-wide for owner: true when owner holds it now (src/cluster/unique-names.ts). */
  claim (name: string, owner: string): Promise<boolean>
  release (name: string): void
  /** Resolves once this node has applied every change the state bucket held when called, or after a second. */
  caughtUp (): Promise<void>
  close (): Promise<void>
}

/**
 * Joins the cluster: connects to the engine, ships what this node recorded and did not ship before it stopped, and
 * applies what the other nodes changed meanwhile, before the hot threads serve (startService awaits this).
 */
export async function joinCluster (deps: { cluster: ClusterConfig, store: Store, shipped: ShippedChanges, log: Logger, onShipped: () => void }): Promise<ClusterNode> {
  const { cluster, store, shipped, log } = deps
  const changes = store.changes
  if (changes === undefined) throw new Error('a cluster node needs a store opened with replicate: true')
  // Names this data directory's changes in the engine's duplicate window: a node id may be reused by a new disk.
  let incarnation = store.meta.get('cluster:incarnation') as string | undefined
  if (incarnation === undefined) {
    const made = incarnation = randomBytes(8).toString('hex')
    store.write(() => store.meta.putSync('cluster:incarnation', made))
  }
  // What shipped before a restart: everything older than the first change still waiting.
  const first = changes.pending(1)[0]
  shipped.advance(first !== undefined ? first.seq - 1 : changes.recorded)
  const engine = await connectEngine(cluster, log)
  const shipper = new ChangeShipper({
    store,
    changes,
    engine,
    incarnation,
    log,
    onShipped: (through) => {
      shipped.advance(through)
      deps.onShipped()
    }
  })
  changes.onCommitted(() => shipper.kick())
  shipper.kick()
  const applier = new ChangeApplier({ store, changes, log })
  await applier.start(engine)
  // Retries what the engine did not acknowledge (a member lost, no quorum for a while).
  const timer = setInterval(() => shipper.kick(), 1000)
  timer.unref()
  log.info('joined the cluster', { node: cluster.nodeId, engine: cluster.natsUrls, applied_revision: applier.applied })
  return {
    kick: () => shipper.kick(),
    async claim (name, owner) {
      const key = claimKey(name)
      // Waits out a claims stream that is electing its leader, as a write waits for its quorum.
      const deadline = Date.now() + cluster.ackTimeoutMs
      for (;;) {
        try {
          await engine.claims.create(key, new TextEncoder().encode(owner))
          return true
        } catch (err) {
          // JetStream's "wrong last sequence": the key exists; the name is this request's only if its own claim landed.
          if ((err as { api_error?: { err_code?: number } }).api_error?.err_code === 10071) return (await engine.claims.get(key))?.string() === owner
          if (Date.now() + 250 >= deadline) {
            log.warn('cluster: a name could not be claimed', { name, error: err instanceof Error ? err.message : String(err) })
            throw err
          }
          await new Promise((resolve) => setTimeout(resolve, 250))
        }
      }
    },
    caughtUp: () => applier.caughtUp(engine, 1000),
    release (name) {
      engine.claims.delete(claimKey(name)).catch((err: unknown) => log.warn('cluster: a claimed name was not given back; it lapses by itself', { error: err instanceof Error ? err.message : String(err) }))
    },
    async close () {
      clearInterval(timer)
      applier.stop()
      await shipper.idle()
      await engine.close()
    }
  }
}
