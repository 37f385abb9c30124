import type { Logger } from '../log.js'
import type { Store } from '../store/store.js'
import type { ClusterNode } from './node.js'
import type { ShippedChanges } from './shipped.js'

/**
 * Time-driven work that must happen once cluster-wide (a hold expiring gives its spots back once, a campaign's end
 * raises campaign.completed once), where every node's supervisor sees it due on the same second. A node with work due
 * takes the record's lock, catches up with the cluster, runs the job against what the last holder left, and gives
 * the lock back once the job's writes are held by the engine: the next node to take it finds them applied and nothing
 * left to do. A round that cannot catch up, or whose writes are not acknowledged in time, does nothing more: in the
 * second case its lock is left to lapse (30 s) rather than given back, so no other node acts on a catalog that lacks
 * what it wrote.
 */
export class LockedJobs {
  readonly #node: ClusterNode
  readonly #store: Store
  readonly #shipped: ShippedChanges
  readonly #owner: string
  readonly #ackTimeoutMs: number
  readonly #log: Logger
  #running = false
  #round = 0

  constructor (deps: { node: ClusterNode, store: Store, shipped: ShippedChanges, nodeId: string, ackTimeoutMs: number, log: Logger }) {
    this.#node = deps.node
    this.#store = deps.store
    this.#shipped = deps.shipped
    this.#owner = `${deps.nodeId}:jobs`
    this.#ackTimeoutMs = deps.ackTimeoutMs
    this.#log = deps.log
  }

  /** Runs job under the record's lock when due() says there is work; undefined when it did not run. */
  async run<T> (record: string, due: () => boolean, job: () => T): Promise<T | undefined> {
    if (this.#running || !due()) return undefined
    this.#running = true
    let lock: number | false = false
    let giveBack = true
    try {
      // An owner per round: a hold left to lapse by an earlier round is not this round's.
      lock = await this.#node.lock(record, `${this.#owner}:${++this.#round}`)
      if (lock === false || !await this.#node.caughtUp()) return undefined
      this.#store.refresh()
      if (!due()) return undefined
      const before = this.#store.changes?.recorded ?? 0
      const result = job()
      const recorded = this.#store.changes?.recorded ?? 0
      if (recorded > before && !await this.#shipped.wait(recorded, this.#ackTimeoutMs)) {
        giveBack = false
        this.#log.warn('cluster: a job\'s writes were not acknowledged in time; its lock lapses by itself', { record })
      }
      return result
    } catch (err) {
      this.#log.warn('cluster: a locked job did not run', { record, error: err instanceof Error ? err.message : String(err) })
      return undefined
    } finally {
      if (lock !== false && giveBack) this.#node.unlock(record, lock)
      this.#running = false
    }
  }
}
