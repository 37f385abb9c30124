import { Analytics } from './analytics/client.js'
import { ResultCache } from './analytics/results.js'
import type { Params } from './analytics/sql.js'
import { Authenticator } from './auth/authenticate.js'
import { KeySealer } from './auth/sealed-keys.js'
import { dropAllShipped, FunnelLog } from './events/funnel.js'
import { openHotJournal, recoverHotJournals } from './hot/journal.js'
import { expireBids } from './bidding/auction/expiry.js'
import { ScreenClaims } from './bidding/auction/claims.js'
import { expireExchangeBids } from './exchange/routes/bidder.js'
import { biddingKinds } from './notify/kinds.js'
import { Notices } from './notify/notices.js'
import { NoticeSender } from './notify/sender.js'
import { systemClock, type Clock } from './clock.js'
import type { Config, ResolvedConfig } from './config.js'
import { resolveAdminToken } from './admin/token.js'
import { ProofSigner } from './proof/signer.js'
import { allRoutes } from './routes.js'
import { ImpIds } from './inventory/adslots/imp-ids.js'
import { activateMediaBuys, indexWaitingBuys, mediaBuysDue } from './agents/media-buy-activation.js'
import { queueDueReports, reportKind, reportsDue } from './agents/delivery-reports.js'
import { budgetBook } from './campaigns/budget.js'
import { catalogRecord } from './campaigns/catalog-lock.js'
import { campaignJobsDue, runCampaignJobs } from './campaigns/lifecycle.js'
import { bookApplied, tagBookKeys } from './bidding/book.js'
import type { BookKey } from './bidding/records.js'
import { adoptLegacyBindings, Inventory, inventoryOptions } from './inventory/inventory.js'
import { adoptSeatKeyLists } from './auth/keys.js'
import { Moderator } from './moderation/moderator.js'
import { JournalTurns } from './store/journal-turns.js'
import { ObjectStore } from './store/objects.js'
import { holdWritesFor } from './store/open-beside.js'
import { Idempotency } from './http/idempotency.js'
import { Metrics, renderMetrics } from './http/metrics.js'
import { dashboardOf } from './admin/dashboard.js'
import type { Dashboard } from './generated/types.js'
import { RateLimiter, type WindowAsk } from './http/rate-limit.js'
import type { RouteDef } from './http/route.js'
import { claimPort, type ClaimedPort } from './http/server.js'
import { broadcast } from './hot/broadcast.js'
import { Supervisor } from './control/supervisor.js'
import type { ClusterNode } from './cluster/node.js'
import { shareSecrets } from './store/secrets.js'
import { adoptMetaSettings } from './store/settings.js'
import { adoptCampaignDelivery } from './campaigns/delivery.js'
import { seatListApplied } from './accounts/seat-lists.js'
import { proofApplied } from './proof/chain.js'
import { ShippedChanges } from './cluster/shipped.js'
import { StartRefused } from './start-refused.js'
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
  /** Moderation of creatives, for tests that wait for it to finish (what the hot threads handed over included). */
  moderator: { idle (): Promise<void> }
  /** The funnel log, for tests and the analytics shipper. */
  funnel: FunnelLog
  /** Outbound notices and their sender, for tests that wait for deliveries (what the hot threads queued included). */
  notices: Notices
  sender: { idle (): Promise<void> }
  /** Outbox events fanned out to webhook deliveries, and their log. */
  webhooks: WebhookDispatcher
  deliveries: DeliveryLog
  /** The analytics process (ClickHouse). */
  analytics: Analytics
  /** The hot threads' report answers: settled() resolves once every query they started has finished (tests). */
  reports: { settled (): Promise<void> }
  /** The hot threads serving HTTP (tests end one to see it replaced). */
  threads: Supervisor
  /** The screens being decided, in memory every thread shares (tests hold one as a hot thread would). */
  claims: ScreenClaims
  /**
   * Runs the periodic jobs now (freshness expiry, offline detection in every hot thread; campaign moves and expiries
   * here); they also run every second on their own.
   */
  runJobs (): Promise<{ demoted: number, offline: number, expiredHolds: number, campaignMoves: number, expiredDeals: number, expiredBids: number, expiredExchangeBids: number }>
  /** Graceful stop: refuse new requests, finish in-flight ones (up to SHUTDOWN_GRACE_MS), flush and close LMDB. */
  close (): Promise<void>
}

export interface ServiceOptions {
  config: Config
  clock?: Clock
  log?: Logger
}

/**
 * Takes the data directory and the port (or refuses to start), opens the store and starts HOT_THREADS hot threads
 * that serve every route on that port (src/hot/thread.ts). This thread supervises them and runs what must run
 * once: moderation, the notice sender, the webhook dispatcher, the analytics process and the periodic jobs, so that
 * none of it competes with a request.
 */
export async function startService ({ config: given, clock = systemClock, log = createLogger(given.logLevel) }: ServiceOptions): Promise<Service> {
  const lock = await lockDataDir(given.dataDir)
  let claimed: ClaimedPort
  try {
    claimed = await claimPort(given.host, given.port)
  } catch (err) {
    await lock.release()
    throw err
  }
  const port = claimed.port
  const store = openStore(given.dataDir, { mode: given.durability, syncIntervalMs: given.syncIntervalMs }, undefined, { replicate: given.cluster !== undefined, node: given.cluster?.nodeId })
  const admin = resolveAdminToken(given.adminToken, given.dataDir)
  if (admin.generatedAt !== undefined) log.info('operator token', { path: admin.generatedAt })
  const url = `http://${given.host === '0.0.0.0' ? '127.0.0.1' : given.host}:${port}`
  const config: ResolvedConfig = { ...given, port, adminToken: admin.token, baseUrl: given.baseUrl ?? url }
  const outbox = new Outbox(store, clock)
  const auth = new Authenticator(store, clock, admin.token)
  const metrics = new Metrics(0, store.held)
  adoptMetaSettings(store)
  adoptCampaignDelivery(store)
  const inventory = new Inventory(store, outbox, clock, inventoryOptions(config, false))
  adoptLegacyBindings(store)
  adoptSeatKeyLists(store)
  const objects = new ObjectStore(config.dataDir, store)
  objects.adopt()
  const moderator = new Moderator(store, outbox, objects, clock, log, { maxBytes: config.maxCreativeBytes, timeoutMs: config.creativeFetchTimeoutMs, allowPrivate: config.allowPrivateAssetUrls, dnsServers: config.dnsServers })
  const sealer = KeySealer.open(config.keyEncryptionKey, config.dataDir)
  if (config.cluster !== undefined) shareSecrets(store, (name) => sealer.derive(name))
  const notices = new Notices(store)
  const funnel = new FunnelLog(store)
  const deliveries = new DeliveryLog(store)
  // What the hot threads acknowledged and a crash kept from LMDB, before any thread serves or a job reads bids.
  // The supervisor's claims are thread 0's: the expiry job skips a screen a hot thread is deciding.
  const claims = new ScreenClaims(0)
  const journals = JournalTurns.memory(config.hotThreads)
  const intake = { store, outbox, notices, funnel, moderator, metrics, claims }
  tagBookKeys(store)
  const recovered = recoverHotJournals(intake, config.dataDir)
  if (recovered > 0) log.info('hot journals replayed', { entries: recovered })
  const kinds = { ...biddingKinds(store, sealer, config.noticeTimeoutMs), webhook: webhookKind({ store, sealer, notices, outbox, log: deliveries }, config.webhookTimeoutMs), report: reportKind({ store, sealer }, config.webhookTimeoutMs) }
  const sender = new NoticeSender({ store, notices, clock, log, metrics, kinds }, { allowPrivate: config.allowPrivateCallbackUrls, dnsServers: config.dnsServers })
  const webhooks = new WebhookDispatcher({ store, outbox, notices, deliveries, clock, log })
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
  const reports = new ResultCache(clock, log, config.reportCacheSeconds * 1000, config.reportWaitMs)
  const limiter = new RateLimiter(clock, undefined, { cluster: config.cluster !== undefined })
  const idempotency = new Idempotency(store, clock)
  const started = clock.now()
  // Asked by a hot thread for /admin/v1/dashboard: every thread's counters (the event-loop delay left for /metrics).
  const dashboard = async (): Promise<Dashboard> => dashboardOf([metrics.snapshot(clock.now(), false), ...await threads.call('snapshot', false)], {
    now: clock.now(), started, store, moderationQueue: moderator.queued, noticesPending: notices.size(), outboxPending: outbox.size(), funnel, connected: analytics.backend !== undefined
  })
  const replicated = new ShippedChanges()
  let cluster: ClusterNode | undefined
  const threads: Supervisor = new Supervisor({
    config,
    shared: { clock: clock.share?.() ?? { kind: 'system' }, generations: store.generations, limits: limiter.buffer, inFlight: idempotency.buffer, funnel: funnel.buffer, claims: { buffer: claims.buffer, counters: claims.counters }, shipped: replicated.buffer, journals }
  }, {
    replicate: () => cluster?.kick(),
    claim: async (name: string, owner: string, takeOverAfterMs?: number) => {
      if (cluster === undefined) throw new Error('not a cluster node')
      return await cluster.claim(name, owner, takeOverAfterMs)
    },
    release: async (name: string, owner: string) => { await cluster?.release(name, owner) },
    lock: async (name: string, owner: string) => {
      if (cluster === undefined) throw new Error('not a cluster node')
      return await cluster.lock(name, owner)
    },
    unlock: (name: string, n: number) => cluster?.unlock(name, n),
    caughtUp: async () => await cluster?.caughtUp() ?? false,
    lease: (ask: WindowAsk) => cluster?.lease(ask),
    budget: (campaignId: string, wantMicros: number) => cluster?.leaseBudget(campaignId, wantMicros),
    log: (line: string) => log.write(line),
    moderate: (id: string) => moderator.schedule(id),
    analyze: async (url: string, declaredType: string) => await moderator.analyze(url, declaredType),
    outbox: () => webhooks.kick(),
    notices: (due: Array<[string, number]>) => {
      for (const [origin, at] of due) notices.noted(origin, at)
      sender.kick()
    },
    query: (sql: string, params?: Params, timeoutMs?: number) => analytics.query(sql, params, timeoutMs),
    broadcast: (channel: string, key: string, value: unknown) => threads.notify('broadcast', channel, key, value),
    dashboard,
    endThread: (thread: number) => {
      const ended = threads.end(thread)
      if (ended) store.write(() => outbox.append('audit.hot_thread.ended', `hot_thread:${thread}`, { actor: 'operator', thread }))
      return ended
    },
    scrape: async () => renderMetrics([metrics.snapshot(clock.now()), ...await threads.call('snapshot')], {
      oohbid_hot_threads: { help: 'Hot threads serving HTTP (HOT_THREADS).', value: config.hotThreads },
      oohbid_outbox_pending_events: { help: 'Events held in the outbox, the durable log webhooks are delivered from, until it is compacted.', value: outbox.size() },
      oohbid_funnel_pending_events: { help: 'Funnel events in LMDB waiting for the analytics process to ship them (to ClickHouse; on a cluster node to the funnel stream).', value: funnel.size() },
      oohbid_notices_pending: { help: 'Win, loss and billing notices and legacy notifications waiting for their (next) attempt.', value: notices.size() },
      oohbid_analytics_connected: { help: 'Whether the analytics process is connected to ClickHouse (1) or not (0).', value: analytics.backend !== undefined ? 1 : 0 },
      oohbid_analytics_lag_seconds: { help: 'Age of the oldest funnel event not yet shipped, seconds (0 when none waits): how far reports lag (on a cluster node, behind the funnel stream).', value: funnel.lagSeconds(clock.now()) }
    })
  }, log, () => store.refresh())
  // The routes as the hot threads build them, for the OpenAPI document's tests and tools; this thread serves none.
  const routes = allRoutes({ config, clock, store, outbox, auth, inventory, impIds: new ImpIds(store), objects, moderator, sealer, proofSigner: ProofSigner.forService(config), notices, deliveries, funnel, journal: openHotJournal(intake, config.dataDir, config.durability, 'supervisor', new JournalTurns(journals, 0)), claims, analytics, reports, metrics, scrape: () => Promise.resolve(''), dashboard, endThread: () => Promise.resolve(false), shared: broadcast(() => {}) })
  try {
    // A cluster node serves only once it holds what the cluster acknowledged while it was away.
    if (config.cluster !== undefined) {
      // The engine's client (nats) loads only on a cluster node: a node alone starts without it.
      const { joinCluster } = await import('./cluster/node.js')
      cluster = await joinCluster({ cluster: config.cluster, store, objects, shipped: replicated, limiter, budgets: budgetBook(store, () => clock.now()), log, onShipped: () => threads.notify('shipped'), onGranted: () => threads.notify('granted'), onApplied: (table, key, previous) => {
          inventory.applied(table, key as string)
          seatListApplied(store, table, key as string, previous)
          proofApplied(store, table, key as string)
          bookApplied(store, claims, table, key as BookKey)
        }
      }).catch((err: unknown) => {
        throw new StartRefused(err instanceof Error ? err.message : String(err))
      })
    }
    if (cluster !== undefined) {
      const node = cluster
      moderator.claimWith({ claim: (id) => node.claim(`moderation:${id}`, config.cluster!.nodeId), release: (id) => node.release(`moderation:${id}`, config.cluster!.nodeId) })
    }
    await threads.start(config.hotThreads)
    claimed.release()
  } catch (err) {
    claimed.release()
    await threads.close().catch(() => 0)
    await cluster?.close().catch(() => {})
    await store.close()
    await lock.release()
    throw err
  }
  let analyticsState = ''
  const tellAnalytics = () => {
    const state = { backend: analytics.backend, lastError: analytics.lastError }
    const text = JSON.stringify(state)
    if (text === analyticsState) return
    analyticsState = text
    threads.notify('analytics', state)
  }
  moderator.resume()
  indexWaitingBuys(store)
  sender.start()
  webhooks.start()
  analytics.start()
  /** Whatever the hot threads handed over before now has arrived (each answers after the messages it sent before). */
  const flushed = () => threads.call('flushed')
  const catalogJobs = (now: number) => ({
    ...runCampaignJobs(store, outbox, now),
    activatedMediaBuys: activateMediaBuys({ store, outbox, inventory, config }, now),
    queuedReports: queueDueReports({ store, notices }, now)
  })
  const nothingMoved = { expiredHolds: 0, campaignMoves: 0, expiredDeals: 0, activatedMediaBuys: 0, queuedReports: 0 }
  const node = cluster
  const locked = node !== undefined ? new (await import('./cluster/locked-jobs.js')).LockedJobs({ node, store, shipped: replicated, nodeId: config.cluster!.nodeId, ackTimeoutMs: config.cluster!.ackTimeoutMs, log }) : undefined
  /**
   * The jobs this thread runs: campaign moves, expired holds and deals, media buys whose creative was approved, media
   * buys' due delivery reports (on a cluster node under the catalog's lock, once cluster-wide), bids their imps outlived
   * (this node's own).
   */
  const ownJobs = async () => {
    const catalog = locked === undefined ? catalogJobs(clock.now()) : await locked.run(catalogRecord(), () => campaignJobsDue(store, clock.now()) || mediaBuysDue(store, clock.now()) || reportsDue(store, clock.now()), () => catalogJobs(clock.now()))
    return {
      ...(catalog ?? nothingMoved),
      expiredBids: expireBids({ store, notices, claims }, clock.now()),
      expiredExchangeBids: expireExchangeBids(store, clock.now())
    }
  }
  const runJobs = async () => {
    // This thread's Inventory arms the signals of the screens a cluster node applied from the engine.
    const inThreads = [...await threads.call('runJobs'), inventory.runJobs()]
    return {
      demoted: inThreads.reduce((n, j) => n + j.demoted, 0),
      offline: inThreads.reduce((n, j) => n + j.offline, 0),
      ...await ownJobs()
    }
  }
  const timers = [
    setInterval(() => {
      ownJobs().catch((err: unknown) => log.error('a job failed', { error: err instanceof Error ? err.message : String(err) }))
      inventory.runJobs()
    }, 1000),
    setInterval(tellAnalytics, 250),
    setInterval(() => idempotency.sweep(), 3_600_000),
    setInterval(() => deliveries.sweep(clock.now()), 3_600_000)
  ]
  for (const t of timers) t.unref()
  tellAnalytics()
  log.info('listening', { url, base_url: config.baseUrl, data_dir: config.dataDir, hot_threads: config.hotThreads })

  let closing: Promise<void> | undefined
  return {
    config,
    url,
    port,
    adminToken: admin.token,
    store,
    outbox,
    routes,
    runJobs,
    moderator: { idle: async () => { await flushed(); await moderator.idle() } },
    funnel,
    notices,
    sender: { idle: async () => { await flushed(); await sender.idle() } },
    webhooks,
    deliveries,
    analytics,
    // Each thread's queries, then the answers they handed to the other threads (forwarded before the settled replies).
    reports: { settled: async () => { await threads.call('settled'); await flushed() } },
    threads,
    claims,
    close () {
      closing ??= (async () => {
        const abandoned = await threads.close()
        for (const t of timers) clearInterval(t)
        await moderator.close()
        webhooks.close()
        await sender.close()
        await analytics.close()
        await cluster?.close()
        await store.close()
        await lock.release()
        log.info('stopped', { in_flight_abandoned: abandoned })
      })()
      return closing
    }
  }
}
