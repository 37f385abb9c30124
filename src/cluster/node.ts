import { randomBytes } from 'node:crypto'
import type { ClusterConfig } from '../config.js'
import type { Logger } from '../log.js'
import type { Store } from '../store/store.js'
import type { RateLimiter, WindowAsk } from '../http/rate-limit.js'
import { ChangeApplier } from './applier.js'
import { connectEngine } from './engine.js'
import { RateLeases } from './rate-leases.js'
import { ChangeShipper } from './shipper.js'
import type { ShippedChanges } from './shipped.js'
import { claimKey, claimValue, parseClaim } from './unique-names.js'

/** This node's part in a cluster, run by the supervisor. */
export interface ClusterNode {
  /** Ships what the hot threads recorded (they say so after each commit that recorded changes). */
  kick (): void
  /**
   * Claims a name cluster-wide for owner: true when owner holds it now (src/cluster/unique-names.ts); a claim older
   * than takeOverAfterMs is taken over (its request is over).
   */
  claim (name: string, owner: string, takeOverAfterMs?: number): Promise<boolean>
  release (name: string): void
  /**
   * Locks a record cluster-wide for owner, waiting while another holds it: true once held, false when the lock stayed
   * taken for the ack timeout. Throws when the engine cannot say.
   */
  lock (name: string, owner: string): Promise<boolean>
  unlock (name: string): void
  /** Asks the engine for more of a rate-limit window; the grant lands in the windows the hot threads share. */
  lease (ask: WindowAsk): void
  /** Resolves once this node has applied every change the state bucket held when called, or after a second. */
  caughtUp (): Promise<void>
  close (): Promise<void>
}

/**
 * Joins the cluster: connects to the engine, ships what this node recorded and did not ship before it stopped, and
 * applies what the other nodes changed meanwhile, before the hot threads serve (startService awaits this).
 */
export async function joinCluster (deps: { cluster: ClusterConfig, store: Store, shipped: ShippedChanges, limiter: RateLimiter, log: Logger, onShipped: () => void, onGranted: () => void }): Promise<ClusterNode> {
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
  const leases = new RateLeases({ rates: engine.rates, limiter: deps.limiter, log, onGranted: deps.onGranted })
  const applier = new ChangeApplier({ store, changes, log })
  await applier.start(engine)
  // Retries what the engine did not acknowledge (a member lost, no quorum for a while).
  const timer = setInterval(() => shipper.kick(), 1000)
  timer.unref()
  log.info('joined the cluster', { node: cluster.nodeId, engine: cluster.natsUrls, applied_revision: applier.applied })
  return {
    kick: () => shipper.kick(),
    async claim (name, owner, takeOverAfterMs) {
      const key = claimKey(name)
      // Waits out a claims stream that is electing its leader, as a write waits for its quorum.
      const deadline = Date.now() + cluster.ackTimeoutMs
      for (;;) {
        try {
          await engine.claims.create(key, claimValue(owner, Date.now()))
          return true
        } catch (err) {
          // JetStream's "wrong last sequence": the key exists; the name is this request's only if its own claim landed,
          // or if its holder has been gone longer than takeOverAfterMs, when a compare-and-set makes it this one's.
          if ((err as { api_error?: { err_code?: number } }).api_error?.err_code === 10071) {
            const entry = await engine.claims.get(key)
            const held = entry !== null && entry.operation === 'PUT' ? parseClaim(entry.string()) : undefined
            if (held?.owner === owner) return true
            if (entry === null || held === undefined || takeOverAfterMs === undefined || Date.now() - held.at <= takeOverAfterMs) return false
            return await engine.claims.update(key, claimValue(owner, Date.now()), entry.revision).then(() => true, () => false)
          }
          if (Date.now() + 250 >= deadline) {
            log.warn('cluster: a name could not be claimed', { name, error: err instanceof Error ? err.message : String(err) })
            throw err
          }
          await new Promise((resolve) => setTimeout(resolve, 250))
        }
      }
    },
    async lock (name, owner) {
      const key = claimKey(name)
      const deadline = Date.now() + cluster.ackTimeoutMs
      for (;;) {
        try {
          await engine.locks.create(key, new TextEncoder().encode(owner))
          return true
        } catch (err) {
          if ((err as { api_error?: { err_code?: number } }).api_error?.err_code !== 10071 && Date.now() + 250 >= deadline) throw err
          if (Date.now() + 50 >= deadline) return false
          // Held by another request (10071), or the bucket electing its leader: look again shortly.
          await new Promise((resolve) => setTimeout(resolve, 50))
        }
      }
    },
    unlock (name) {
      engine.locks.delete(claimKey(name)).catch((err: unknown) => log.warn('cluster: a lock was not given back; it lapses by itself', { error: err instanceof Error ? err.message : String(err) }))
    },
    caughtUp: () => applier.caughtUp(engine, 1000),
    lease: (ask) => leases.ask(ask),
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
