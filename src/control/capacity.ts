import type { CapacityLog } from '../campaigns/capacity.js'
import { CLAIMS_LOG, claimsMachine, decideBookings, partitionMachine, recoverClaims, stepAndRelay, type CapacityLogs } from '../campaigns/capacity-logs.js'
import type { BookingLink } from '../campaigns/rehearsed-bookings.js'
import type { ClusterNode } from '../cluster/node.js'
import { partitionStream, type PartitionMachine } from '../cluster/partition-log.js'
import type { ClusterConfig } from '../config.js'
import type { Logger } from '../log.js'
import { isSettleCommand, settlementMachine } from '../bidding/auction/fenced-settlements.js'
import type { Notices } from '../notify/notices.js'
import type { Store } from '../store/store.js'

/** How often the supervisor finishes what coordinators left undone (capacity-logs.ts recoverClaims). */
const RECOVER_MS = 1000

/**
 * How long past its due time a claim waits before this node's recovery acts on it: its coordinator, or the node that
 * asked for its lapse, normally does so first.
 */
const RECOVER_GRACE_MS = 2000

const streamOf = (log: CapacityLog): string => log === 'claims' ? CLAIMS_LOG : partitionStream(log)

/**
 * The logs a cluster node follows for its partitions of the screens: one per partition, deciding bookings of its
 * screens' time and the settlements of their bids, and the claims log, deciding bookings over several partitions.
 */
export function partitionMachines (store: Store, notices: Notices, cluster: ClusterConfig): Array<{ stream: string, machine: PartitionMachine }> {
  const { partitions } = cluster
  return [
    ...Array.from({ length: partitions }, (_, p) => {
      const bookings = partitionMachine(store, p, partitions)
      const settlements = settlementMachine(store, notices, { node: cluster.nodeId, partition: p })
      const machine: PartitionMachine = {
        tables: [...bookings.tables ?? [], ...settlements.tables],
        apply: (body, at) => isSettleCommand(body) ? settlements.apply(body, at) : bookings.apply(body, at),
        refused: (body, at) => { if (isSettleCommand(body)) settlements.refused(body, at) }
      }
      return { stream: partitionStream(p), machine }
    }),
    { stream: CLAIMS_LOG, machine: claimsMachine(store) }
  ]
}

/**
 * A cluster node's bookings, run by its supervisor: its threads' rehearsed commands decided in the logs, holds asked
 * to lapse, and every second what a coordinator left undone (a node that stopped mid-claim) finished.
 */
export function startCapacity (store: Store, node: ClusterNode, cluster: ClusterConfig, log: Logger): BookingLink & { stop (): void } {
  const logs: CapacityLogs = {
    partitions: cluster.partitions,
    propose: async (l, key, body) => await node.propose(streamOf(l), key, body),
    owns: (l) => node.owns(streamOf(l))
  }
  // A claim stays pending in the claims log this long before any node may abort it: its coordinator's steps take
  // at most three acknowledgements.
  const timeoutMs = 3 * cluster.ackTimeoutMs
  let running = false
  const timer = setInterval(() => {
    if (running) return
    running = true
    store.refresh()
    recoverClaims(store, logs, Date.now(), RECOVER_GRACE_MS).catch((err: unknown) => {
      log.warn('bookings: recovery did not finish; it tries again', { error: err instanceof Error ? err.message : String(err) })
    }).finally(() => { running = false })
  }, RECOVER_MS)
  timer.unref()
  return {
    decide: async (base, commands) => {
      store.refresh()
      return await decideBookings(store, logs, base, commands, timeoutMs)
    },
    expire: (claim) => {
      void stepAndRelay(store, logs, { op: 'expire', claim }, `expire:${claim}:${Math.floor(Date.now() / 1000)}`).catch(() => {})
    },
    stop: () => clearInterval(timer)
  }
}
