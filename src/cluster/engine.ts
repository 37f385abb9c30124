import { connect, nanos, type JetStreamClient, type JetStreamManager, type KV, type NatsConnection, type ObjectStore } from 'nats'
import type { ClusterConfig } from '../config.js'
import type { Logger } from '../log.js'
import { retryFor } from '../retry.js'

/** The KV bucket that holds the replicated tables, one key per row (src/cluster/state-keys.ts). */
export const STATE_BUCKET = 'oohbid_state'

/** The object store of the bytes of stored objects, creative assets (src/cluster/objects.ts). */
const OBJECTS_BUCKET = 'oohbid_objects'

/** The object store of the logs' checkpoints, one object a log (src/cluster/checkpoints.ts). */
const CHECKPOINTS_BUCKET = 'oohbid_checkpoints'

/**
 * The stream of the eventual tables' changes (FEIN, heartbeats): one message per shipping round of a node, on the
 * subject SIGNALS_SUBJECT.<node>, kept SIGNALS_KEEP_MS for nodes that were away briefly (src/cluster/shipper.ts).
 */
export const SIGNALS_STREAM = 'OOHBID_SIGNALS'
export const SIGNALS_SUBJECT = 'oohbid.signals'
const SIGNALS_KEEP_MS = 10 * 60_000

/**
 * The stream of the bids taken: one message per shipping round of a node and partition of the screens, on
 * BOOK_SUBJECT.<partition>.<node> (src/cluster/book-parts.ts), kept ClusterConfig.bookKeepMs. A node consumes the
 * subjects of the partitions it owns, each from the stream's start (src/cluster/applier.ts, hold), so a bid taken
 * through any node reaches the owner of its screen's partition, which decides the screen's spots, and no other node.
 */
export const BOOK_STREAM = 'OOHBID_BOOK'
export const BOOK_SUBJECT = 'oohbid.book'

/** This node's connection to the cluster's engine (NATS JetStream) and the bucket of replicated state. */
export interface Engine {
  nc: NatsConnection
  js: JetStreamClient
  jsm: JetStreamManager
  state: KV
  objects: ObjectStore
  checkpoints: ObjectStore
  close (): Promise<void>
}

/**
 * Runs fn until it answers or waitMs passes: at start a node waits for an engine that is busy or electing (each call
 * times out after CLUSTER_ACK_TIMEOUT_MS) instead of refusing to start.
 */
export async function untilAnswered<T> (what: string, fn: () => Promise<T>, log: Logger, waitMs = 60_000): Promise<T> {
  return await retryFor(fn, waitMs, 500, (err) => log.warn(`cluster: ${what} failed; retrying`, { error: err instanceof Error ? err.message : String(err) }))
}

/**
 * Creates a stream, or changes how long an existing one keeps messages when a node was configured otherwise (the last
 * node started says): adding a stream that exists with other settings fails.
 */
export async function ensureStream (jsm: JetStreamManager, config: { name: string, subjects: string[], num_replicas: number, max_age: number }): Promise<void> {
  const stream = await jsm.streams.info(config.name).catch(() => undefined)
  if (stream === undefined) await jsm.streams.add(config)
  else if (stream.config.max_age !== config.max_age || stream.config.subjects.join() !== config.subjects.join()) await jsm.streams.update(config.name, { ...stream.config, max_age: config.max_age, subjects: config.subjects })
}

/**
 * Connects to the engine and opens (creating it the first time, with the same settings from every node) the state
 * bucket. Retries until startWaitMs: members start in any order, and JetStream answers only once its cluster has
 * elected a meta leader. The connection then reconnects by itself, forever, to whichever member is up.
 */
export async function connectEngine (cluster: ClusterConfig, log: Logger, startWaitMs = 60_000): Promise<Engine> {
  const deadline = Date.now() + startWaitMs
  let last: unknown
  while (Date.now() < deadline) {
    let nc: NatsConnection | undefined
    try {
      // noAsyncTraces: the client would capture two stacks at every request (each publish), for a timeout's message:
      // 5% of the supervisor's thread on a node taking bids (profiled), for context our own errors carry anyway.
      nc = await connect({ servers: cluster.natsUrls, name: cluster.nodeId, maxReconnectAttempts: -1, reconnectTimeWait: 250, timeout: 2000, noAsyncTraces: true })
      const js = nc.jetstream({ timeout: cluster.ackTimeoutMs })
      // history 1: a bucket of the current rows, which a node that joins reads whole and a node that returns
      // resumes from the revision it last applied.
      const state = await js.views.kv(STATE_BUCKET, { history: 1, replicas: cluster.replicas })
      const objects = await js.views.os(OBJECTS_BUCKET, { replicas: cluster.replicas })
      const checkpoints = await js.views.os(CHECKPOINTS_BUCKET, { replicas: cluster.replicas })
      const jsm = await nc.jetstreamManager()
      await ensureStream(jsm, { name: SIGNALS_STREAM, subjects: [`${SIGNALS_SUBJECT}.*`], num_replicas: cluster.replicas, max_age: nanos(SIGNALS_KEEP_MS) })
      await ensureStream(jsm, { name: BOOK_STREAM, subjects: [`${BOOK_SUBJECT}.>`], num_replicas: cluster.replicas, max_age: nanos(cluster.bookKeepMs) })
      const conn = nc
      return { nc, js, jsm, state, objects, checkpoints, close: () => conn.drain() }
    } catch (err) {
      last = err
      await nc?.close().catch(() => {})
      log.warn('cluster engine not ready; retrying', { error: err instanceof Error ? err.message : String(err) })
      await new Promise((resolve) => setTimeout(resolve, 500))
    }
  }
  throw new Error(`could not reach the cluster's engine at ${cluster.natsUrls.join(', ')} within ${startWaitMs / 1000} s: ${last instanceof Error ? last.message : String(last)}`)
}
