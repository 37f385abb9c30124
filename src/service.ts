import { Analytics } from './analytics/client.js'
import { ResultCache } from './analytics/results.js'
import { Authenticator } from './auth/authenticate.js'
import { KeySealer } from './auth/sealed-keys.js'
import { FunnelLog } from './events/funnel.js'
import { expireBids } from './hot/auction/expiry.js'
import { expireExchangeBids } from './hot/bidder/route.js'
import { biddingKinds } from './notify/kinds.js'
import { Notices } from './notify/notices.js'
import { NoticeSender } from './notify/sender.js'
import { systemClock, type Clock } from './clock.js'
import type { Config, ResolvedConfig } from './config.js'
import { resolveAdminToken } from './control/admin/token.js'
import { ProofSigner } from './proof/signer.js'
import { allRoutes } from './routes.js'
import { ImpIds } from './hot/adslots/imp-ids.js'
import { Bookings } from './inventory/bookings.js'
import { bookedOn } from './campaigns/ledger.js'
import { runCampaignJobs } from './campaigns/lifecycle.js'
import { Inventory } from './inventory/inventory.js'
import { Moderator } from './moderation/moderator.js'
import { ObjectStore } from './store/objects.js'
import type { HttpDeps, Lifecycle } from './http/exchange.js'
import { Idempotency } from './http/idempotency.js'
import { Metrics } from './http/metrics.js'
import { RateLimiter } from './http/rate-limit.js'
import type { RouteDef } from './http/route.js'
import { listen, type HttpServer } from './http/server.js'
import { createLogger, type Logger } from './log.js'
import { Outbox } from './store/outbox.js'
import { lockDataDir } from './store/data-dir-lock.js'
import { openStore, type Store } from './store/store.js'
import { DeliveryLog } from './webhooks/delivery-log.js'
import { WebhookDispatcher } from './webhooks/dispatcher.js'
import { webhookKind } from './webhooks/kind.js'

/** A running service. */
export interface Service {
  config: ResolvedConfig
  url: string
  port: number
  adminToken: string
  store: Store
  outbox: Outbox
  /** Every route served, as the OpenAPI document describes them. */
  routes: RouteDef[]
  /** Moderation of creatives, for tests that wait for it to finish. */
  moderator: Moderator
  /** The funnel log, for tests and the analytics shipper. */
  funnel: FunnelLog
  /** Outbound notices and their sender, for tests that wait for deliveries. */
  notices: Notices
  sender: NoticeSender
  /** Outbox events fanned out to webhook deliveries, and their log. */
  webhooks: WebhookDispatcher
  deliveries: DeliveryLog
  /** The analytics process (ClickHouse) and the report answers drawn from it. */
  analytics: Analytics
  reports: ResultCache
  /** Runs the periodic jobs now (freshness expiry, offline detection); they also run every second on their own. */
  runJobs (): { demoted: number, offline: number, expiredHolds: number, campaignMoves: number, expiredDeals: number, expiredBids: number, expiredExchangeBids: number }
  /** Graceful stop: refuse new requests, finish in-flight ones (up to SHUTDOWN_GRACE_MS), flush and close LMDB. */
  close (): Promise<void>
}

export interface ServiceOptions {
  config: Config
  clock?: Clock
  log?: Logger
}

/** Takes the data directory and the port (or refuses to start), opens the store, builds every route and serves. */
export async function startService ({ config: given, clock = systemClock, log = createLogger(given.logLevel) }: ServiceOptions): Promise<Service> {
  const lock = await lockDataDir(given.dataDir)
  let server: HttpServer
  try {
    server = await listen(given.host, given.port)
  } catch (err) {
    await lock.release()
    throw err
  }
  const store = openStore(given.dataDir, { mode: given.durability, syncIntervalMs: given.syncIntervalMs })
  const admin = resolveAdminToken(given.adminToken, given.dataDir)
  if (admin.generatedAt !== undefined) log.info('operator token', { path: admin.generatedAt })
  const url = `http://${given.host === '0.0.0.0' ? '127.0.0.1' : given.host}:${server.port}`
  const config: ResolvedConfig = { ...given, baseUrl: given.baseUrl ?? url }
  const outbox = new Outbox(store, clock)
  const auth = new Authenticator(store, clock, admin.token)
  const metrics = new Metrics()
  const lifecycle: Lifecycle = { draining: false, inFlight: 0, onIdle: undefined }
  const deps: HttpDeps = { config, clock, log, store, auth, metrics, lifecycle, limiter: new RateLimiter(clock), idempotency: new Idempotency(store, clock) }
  if (store.meta.get('settings:partner_display') === undefined) store.write(() => store.meta.putSync('settings:partner_display', config.partnerDisplay))
  const inventory = new Inventory(store, outbox, clock, { heartbeatTimeoutMs: config.heartbeatTimeoutSeconds * 1000, baseUrl: config.baseUrl, domain: config.operator.domain })
  const objects = new ObjectStore(config.dataDir)
  const moderator = new Moderator(store, outbox, objects, clock, log, { maxBytes: config.maxCreativeBytes, timeoutMs: config.creativeFetchTimeoutMs, allowPrivate: config.allowPrivateAssetUrls, dnsServers: config.dnsServers })
  const bookings = new Bookings()
  bookings.register((screenId, date) => bookedOn(store, screenId, date))
  const sealer = KeySealer.open(config.keyEncryptionKey, config.dataDir)
  const notices = new Notices(store)
  const funnel = new FunnelLog(store)
  const deliveries = new DeliveryLog(store)
  const kinds = { ...biddingKinds(store, sealer, config.noticeTimeoutMs), webhook: webhookKind({ store, sealer, notices, outbox, log: deliveries }, config.webhookTimeoutMs) }
  const sender = new NoticeSender({ store, notices, clock, log, metrics, kinds }, { allowPrivate: config.allowPrivateCallbackUrls, dnsServers: config.dnsServers })
  const webhooks = new WebhookDispatcher({ store, outbox, notices, deliveries, clock, log })
  const analytics = new Analytics({
    dataDir: config.dataDir,
    durability: config.durability,
    syncIntervalMs: config.syncIntervalMs,
    logLevel: config.logLevel,
    database: config.clickhouseDatabase,
    ...(config.clickhouseCluster !== undefined ? { cluster: config.clickhouseCluster } : {}),
    ...(config.clickhouseUrl !== undefined ? { url: config.clickhouseUrl } : {}),
    ...(config.clickhouseUser !== undefined ? { user: config.clickhouseUser } : {}),
    ...(config.clickhousePassword !== undefined ? { password: config.clickhousePassword } : {})
  }, log)
  analytics.onShipped = (count) => funnel.shipped(count)
  const reports = new ResultCache(clock, log, config.reportCacheSeconds * 1000, config.reportWaitMs)
  const routes = allRoutes({ config, clock, store, outbox, auth, inventory, impIds: new ImpIds(store), bookings, objects, moderator, sealer, proofSigner: ProofSigner.open(config.dataDir), notices, deliveries, funnel, analytics, reports }, metrics)
  server.mount(routes, deps)
  moderator.resume()
  sender.start()
  webhooks.start()
  analytics.start()
  const runJobs = () => ({ ...inventory.runJobs(), ...runCampaignJobs(store, outbox, clock.now()), expiredBids: expireBids({ store, notices }, clock.now()), expiredExchangeBids: expireExchangeBids(store, clock.now()) })
  const timers = [
    setInterval(runJobs, 1000),
    setInterval(() => deps.limiter.sweep(), 60_000),
    setInterval(() => deps.idempotency.sweep(), 3_600_000),
    setInterval(() => deliveries.sweep(clock.now()), 3_600_000)
  ]
  for (const t of timers) t.unref()
  log.info('listening', { url, base_url: config.baseUrl, data_dir: config.dataDir })

  let closing: Promise<void> | undefined
  return {
    config,
    url,
    port: server.port,
    adminToken: admin.token,
    store,
    outbox,
    routes,
    runJobs,
    moderator,
    funnel,
    notices,
    sender,
    webhooks,
    deliveries,
    analytics,
    reports,
    close () {
      closing ??= (async () => {
        lifecycle.draining = true
        server.stopListening()
        if (lifecycle.inFlight > 0) {
          await new Promise<void>((resolve) => {
            const timer = setTimeout(resolve, config.shutdownGraceMs)
            lifecycle.onIdle = () => { clearTimeout(timer); resolve() }
          })
        }
        // The last reply is still corked inside the uWS callback that finished it; let the loop flush it first.
        await new Promise((resolve) => setImmediate(resolve))
        server.closeAll()
        for (const t of timers) clearInterval(t)
        await moderator.close()
        webhooks.close()
        await sender.close()
        await analytics.close()
        await store.close()
        await lock.release()
        log.info('stopped', { in_flight_abandoned: lifecycle.inFlight })
      })()
      return closing
    }
  }
}
