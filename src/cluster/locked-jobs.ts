import { randomBytes } from 'node:crypto'
import type { Logger } from '../log.js'
import { closeFence, type Fence } from '../store/changes.js'
import { lockName, LOCK_TTL_MS } from './record-locks.js'
import { refusalOf } from './fenced-commits.js'
import type { Store } from '../store/store.js'
import type { ClusterNode } from './node.js'
import type { ShippedChanges } from './shipped.js'

/**
 * Time-driven work that must happen once cluster-wide (a hold expiring gives its spots back once, a campaign's end
 * raises campaign.completed once), where every node's supervisor sees it due on the same second. A node with work due
 * takes the record's lock, catches up with the cluster (and waits for what it wrote itself to be decided), runs the job
 * against what the last holder left, its writes fenced by the lock (fenced-commits.ts), and gives the lock back once
 * they are decided: the next node to take it finds them applied and nothing left to do. A job whose writes the names'
 * log refused (this node paused past the lock's 30 s, and another took it over) changed nothing: its rows are put back.
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
    // A lock's owner is this process's alone: a node restarted with the same rounds must not find its old life's lock
    // its own, nor have that life's writes, still waiting to ship, accepted under its new lock.
    this.#owner = `${deps.nodeId}:jobs:${randomBytes(6).toString('base64url')}`
    this.#ackTimeoutMs = deps.ackTimeoutMs
    this.#log = deps.log
  }

  /** Runs job under the record's lock when due() says there is work; undefined when it did not run, or changed nothing. */
  async run<T> (record: string, due: () => boolean, job: () => T): Promise<T | undefined> {
    if (this.#running || !due()) return undefined
    this.#running = true
    let lock: number | false = false
    const fence: Fence = { name: lockName(record), owner: `${this.#owner}:${++this.#round}`, seqs: [] }
    try {
      lock = await this.#node.lock(record, fence.owner)
      if (lock === false || !await this.#node.caughtUp() || !await this.#shipped.wait(this.#store.changes?.recorded ?? 0, this.#ackTimeoutMs)) return undefined
      this.#store.refresh()
      if (!due()) return undefined
      const result = this.#store.changes === undefined ? job() : this.#store.changes.fenced(fence, job)
      // What the job started (a delivery its events kick) writes under no lock from here: it is not waited for.
      const last = closeFence(fence)
      if (last > 0 && !await this.#shipped.wait(last, LOCK_TTL_MS)) {
        this.#log.warn('cluster: a job\'s writes were not decided in time', { record })
        return undefined
      }
      this.#store.refresh()
      if (refusalOf(this.#store, fence) !== undefined) {
        this.#log.warn('cluster: a job\'s writes were refused: its lock passed to another node first, and they were put back', { record })
        return undefined
      }
      return result
    } catch (err) {
      this.#log.warn('cluster: a locked job did not run', { record, error: err instanceof Error ? err.message : String(err) })
      return undefined
    } finally {
      fence.closed = true
      if (lock !== false) this.#node.unlock(record, lock)
      this.#running = false
    }
  }
}
