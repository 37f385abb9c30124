import { Analytics } from '../analytics/client.js'
import type { ResolvedConfig } from '../config.js'
import type { AnalyticsState } from '../hot/operations.js'
import { dropAllShipped, type FunnelLog } from '../events/funnel.js'
import type { Metrics } from '../http/metrics.js'
import type { Logger } from '../log.js'
import { holdWritesFor } from '../store/open-beside.js'
import type { Store } from '../store/store.js'

/**
 * The analytics process (ClickHouse) as the supervisor runs it: what it ships is counted, deleted from the funnel log
 * by the service's writers (it opens LMDB read-only), and its opening of LMDB happens while the writers are held
 * (src/store/open-beside.ts). Not started yet: the service starts it once the hot threads serve.
 */
export function analyticsOf (config: ResolvedConfig, store: Store, funnel: FunnelLog, metrics: Metrics, log: Logger): Analytics {
  const analytics = new Analytics({
    dataDir: config.dataDir,
    durability: config.durability,
    logLevel: config.logLevel,
    database: config.clickhouseDatabase,
    ...(config.clickhouseCluster !== undefined ? { cluster: config.clickhouseCluster } : {}),
    ...(config.clickhouseUrl !== undefined ? { url: config.clickhouseUrl } : {}),
    ...(config.clickhouseUser !== undefined ? { user: config.clickhouseUser } : {}),
    ...(config.clickhousePassword !== undefined ? { password: config.clickhousePassword } : {}),
    batchWaitMs: config.analyticsBatchSeconds * 1000,
    ...(config.cluster !== undefined ? { engine: config.cluster } : {})
  }, log)
  const shipped = (by: number) => metrics.inc('oohbid_funnel_shipped_events_total', 'Funnel events the analytics process has shipped (to ClickHouse; on a cluster node to the funnel stream) and deleted from LMDB.', '', by)
  shipped(0)
  analytics.onShipped = (count) => {
    funnel.shipped(count)
    shipped(count)
  }
  const restarted = (by: number) => metrics.inc('oohbid_analytics_restarts_total', 'Times the analytics process exited unasked and was started again (each costs a second of lag and, on chDB, a reopen).', '', by)
  restarted(0)
  analytics.onRestart = () => restarted(1)
  analytics.onOpening = (pid) => {
    let held = false
    const from = performance.now()
    try {
      held = holdWritesFor((fn) => store.write(fn), config.dataDir, pid)
    } catch (err) {
      log.warn('could not hold the writers for the analytics process', { pid, error: err instanceof Error ? err.message : String(err) })
    }
    // Every write of the node waited this long: worth seeing in the log, once per start of the analytics process.
    if (held) log.info('held the writers while the analytics process opened LMDB', { pid, ms: Math.round((performance.now() - from) * 10) / 10 })
    else log.warn('the analytics process opened LMDB while the writers ran', { pid })
  }
  analytics.onDrop = async (last) => { await dropAllShipped(store, last) }
  return analytics
}

/**
 * Tells the hot threads whenever the analytics process's state changes (connected, the last error), which their
 * report routes answer with; checked four times a second. Returns what stops it.
 */
export function relayAnalyticsState (analytics: Analytics, tell: (state: AnalyticsState) => void): () => void {
  let last = ''
  const relay = () => {
    const state = { backend: analytics.backend, lastError: analytics.lastError }
    const text = JSON.stringify(state)
    if (text === last) return
    last = text
    tell(state)
  }
  relay()
  const timer = setInterval(relay, 250)
  timer.unref()
  return () => clearInterval(timer)
}
