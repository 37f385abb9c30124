import type { ClusterConfig } from '../config.js'
import type { Params } from './sql.js'

/** What the service tells the analytics process at fork (as JSON in OOHBID_ANALYTICS_CONFIG). */
export interface ProcessConfig {
  dataDir: string
  durability: 'os' | 'fsync'
  logLevel: 'error' | 'warn' | 'info' | 'debug'
  database: string
  cluster?: string
  url?: string
  user?: string
  password?: string
  /** How long events wait for a full batch, ms (ANALYTICS_BATCH_SECONDS). */
  batchWaitMs: number
  /** A cluster node's engine: the log goes to the funnel stream, and ClickHouse is loaded from it. */
  engine?: ClusterConfig
}

/** Service -> analytics process. */
export type AnalyticsRequest =
  | { op: 'query', id: number, sql: string, params: Params }
  | { op: 'drain', id: number }
  | { op: 'status', id: number }
  /** The events asked to be deleted (drop) are, or could not be (error): the shipper tries the batch again. */
  | { op: 'dropped', id: number, error?: string }

/** Analytics process -> service. */
export type AnalyticsReply =
  /** About to open the LMDB environment: the service holds its writers meanwhile (src/store/open-beside.ts). */
  | { op: 'opening' }
  | { op: 'ready', backend: 'chdb' | 'server' }
  | { op: 'unavailable', error: string }
  | { op: 'shipped', count: number }
  /** Delete the funnel log's records up to event `last`, which the sink holds: this process opens LMDB read-only. */
  | { op: 'drop', id: number, last: number }
  | { op: 'result', id: number, rows: Array<Record<string, unknown>> }
  | { op: 'error', id: number, error: string }
