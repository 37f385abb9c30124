import type { Params } from './sql.js'

/** ClickHouse as routes see it: queries (answered by the supervisor's analytics process) and whether it is connected. */
export interface AnalyticsSource {
  /** Rows of a SELECT whose values are {name:Type} placeholders (src/analytics/sql.ts), with their values. */
  query (sql: string, params?: Params, timeoutMs?: number): Promise<Array<Record<string, unknown>>>
  /** The backend once connected ('chdb' or 'server'), else undefined. */
  readonly backend: 'chdb' | 'server' | undefined
  readonly lastError: string | undefined
}
