import { AckPolicy, connect, DeliverPolicy, nanos, type JetStreamClient, type JetStreamManager, type NatsConnection } from 'nats'
import type { ClusterConfig } from '../config.js'
import type { Logger } from '../log.js'
import { ensureStream } from './engine.js'
import { retryWithBackoff } from '../retry.js'

/**
 * The stream of every node's funnel events (docs/architecture.md, "Funnel events once"), on a cluster whose nodes each
 * have a ClickHouse of their own (chDB): a node's analytics process publishes its log to FUNNEL_SUBJECT.<node> and
 * loads the stream into its ClickHouse (nodes sharing one ClickHouse server ship their own events there instead). Kept
 * CLUSTER_FUNNEL_KEEP_HOURS, so a node's ClickHouse that was away less than that catches up, and one that joins has
 * that much history.
 */
export const FUNNEL_STREAM = 'OOHBID_FUNNEL'
export const FUNNEL_SUBJECT = 'oohbid.funnel'

/**
 * How long a delivered message may go unacknowledged before the engine gives it again: what a loader that died (and
 * the messages the engine was handing its last fetch) costs in delay. A batch loads in a second or two; a loader
 * whose load takes longer says it is still working every FUNNEL_WORKING_MS. With 5 minutes, a node whose analytics
 * process was killed reported a part of the cluster's plays for 5 minutes (test/cluster.test.ts).
 */
const ACK_WAIT_MS = 30_000
export const FUNNEL_WORKING_MS = 10_000

/** The analytics process's own connection to the engine: the funnel stream and this node's consumer of it. */
export interface FunnelStream {
  nc: NatsConnection
  js: JetStreamClient
  jsm: JetStreamManager
  /** The durable consumer this node loads from. */
  consumer: string
  close (): Promise<void>
}

/**
 * Connects, creating the stream and the durable consumer when they do not exist yet (from every node with the same
 * settings), and retries until it is done or stopped() says to give up: the events wait in LMDB meanwhile.
 * consumer: this node's own, which its loader fills its own ClickHouse with every node's events from.
 */
export async function connectFunnel (cluster: ClusterConfig, consumer: string, log: Logger, stopped: () => boolean): Promise<FunnelStream | undefined> {
  return await retryWithBackoff(async () => {
    const nc = await connect({ servers: cluster.natsUrls, name: `${cluster.nodeId}-analytics`, maxReconnectAttempts: -1, reconnectTimeWait: 250, timeout: 2000 })
    try {
      const js = nc.jetstream({ timeout: cluster.ackTimeoutMs })
      const jsm = await nc.jetstreamManager({ timeout: cluster.ackTimeoutMs })
      await ensureStream(jsm, { name: FUNNEL_STREAM, subjects: [`${FUNNEL_SUBJECT}.*`], num_replicas: cluster.replicas, max_age: nanos(cluster.funnelKeepHours * 3600_000) })
      const known = await jsm.consumers.info(FUNNEL_STREAM, consumer).then(() => true, () => false)
      if (!known) await jsm.consumers.add(FUNNEL_STREAM, { durable_name: consumer, ack_policy: AckPolicy.Explicit, deliver_policy: DeliverPolicy.All, ack_wait: nanos(ACK_WAIT_MS), max_ack_pending: 10_000 })
      return { nc, js, jsm, consumer, close: () => nc.drain() }
    } catch (err) {
      await nc.close().catch(() => {})
      throw err
    }
  }, stopped, (err, retryInMs) => log.warn('cluster: the funnel stream is not reachable; retrying', { error: err instanceof Error ? err.message : String(err), retry_in_ms: retryInMs }))
}
