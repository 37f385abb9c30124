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

/** Analytics process -> service. */
export type AnalyticsReply =
  | { op: 'ready', backend: 'chdb' | 'server' }
  | { op: 'unavailable', error: string }
  | { op: 'shipped', count: number }
  | { op: 'result', id: number, rows: Array<Record<string, unknown>> }
  | { op: 'error', id: number, error: string }
