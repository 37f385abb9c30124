import { Analytics } from './analytics/client.js'
import { ResultCache } from './analytics/results.js'
import { Authenticator } from './auth/authenticate.js'
import { KeySealer } from './auth/sealed-keys.js'
import { FunnelLog } from './events/funnel.js'
import { openHotJournal, recoverHotJournals } from './hot/journal.js'
import { ScreenClaims } from './bidding/auction/claims.js'
import { biddingKinds } from './notify/kinds.js'
import { Notices } from './notify/notices.js'
import { NoticeSender } from './notify/sender.js'
import { systemClock, type Clock } from './clock.js'
import type { Config, ResolvedConfig } from './config.js'
import { resolveAdminToken } from './admin/token.js'
import { ProofSigner } from './proof/signer.js'
import { allRoutes } from './routes.js'
import { ImpIds } from './inventory/adslots/imp-ids.js'
import { indexWaitingBuys } from './agents/media-buy-activation.js'
import { reportKind } from './agents/delivery-reports.js'
import { tagBookKeys } from './bidding/book.js'
import { adoptLegacyBindings, Inventory } from './inventory/inventory.js'
import { inventoryOptions } from './inventory/options.js'
import { adoptSeatKeyLists } from './auth/keys.js'
import { Moderator } from './moderation/moderator.js'
import { JournalTurns } from './store/journal-turns.js'
import { ObjectStore } from './store/objects.js'
import { Idempotency } from './http/idempotency.js'
import { Metrics } from './http/metrics.js'
import { RateLimiter } from './http/rate-limit.js'
import type { RouteDef } from './http/route.js'
import { claimPort, type ClaimedPort } from './http/server.js'
import { broadcast } from './hot/broadcast.js'
import { Supervisor } from './control/supervisor.js'
import { analyticsOf, relayAnalyticsState } from './control/analytics.js'
import { startJobs } from './control/jobs.js'
import { startCapacity } from './control/capacity.js'
import { joinClusterOf } from './control/join.js'
import { dashboardFor, supervisorOperations } from './control/operations.js'
import type { ClusterNode } from './cluster/node.js'
import { shareSecrets } from './store/secrets.js'
import { adoptMetaSettings } from './store/settings.js'
import { adoptCampaignDelivery } from './campaigns/delivery.js'
import { indexBookedDays, indexClaimDays } from './campaigns/capacity.js'
import { ShippedChanges } from './cluster/shipped.js'
import { RehearsedBookings } from './campaigns/rehearsed-bookings.js'
import { clusterShare } from './cluster/share.js'
import { ServedPartitions } from './cluster/served-partitions.js'
import { leasedLeft } from './campaigns/delivery.js'
import { ALONE } from './store/store.js'
import { createLogger, type Logger } from './log.js'
import { Outbox } from './store/outbox.js'
import { proposePlays, startProofRetries } from './proof/proof-log.js'
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
 * Takes the data directory and the port (or refuses to start), opens the store and resolves the configuration.
 * askBudget: where a cluster node's asks for the next part of a campaign's budget go; links: how it books, and where
 * its settlements of bids and its plays' proofs are proposed.
 */
async function takeNode (given: Config, log: Logger, askBudget: (campaignId: string, wantMicros: number) => void, served: ServedPartitions, links: Parameters<typeof clusterShare>[3]): Promise<{ lock: Awaited<ReturnType<typeof lockDataDir>>, claimed: ClaimedPort, store: Store, config: ResolvedConfig & { adminToken: string }, url: string }> {
  const lock = await lockDataDir(given.dataDir)
  let claimed: ClaimedPort
  try {
    claimed = await claimPort(given.host, given.port)
  } catch (err) {
    await lock.release()
    throw err
  }
  const port = claimed.port
  const share = given.cluster !== undefined ? clusterShare(given.cluster.nodeId, served, { leasedLeft, ask: askBudget }, links) : ALONE
  const store = openStore(given.dataDir, { mode: given.durability, syncIntervalMs: given.syncIntervalMs }, undefined, { replicate: given.cluster !== undefined, share })
  const admin = resolveAdminToken(given.adminToken, given.dataDir)
  if (admin.generatedAt !== undefined) log.info('operator token', { path: admin.generatedAt })
  const url = `http://${given.host === '0.0.0.0' ? '127.0.0.1' : given.host}:${port}`
  return { lock, claimed, store, url, config: { ...given, port, adminToken: admin.token, baseUrl: given.baseUrl ?? url } }
}

/** The supervisor's parts, before any thread serves: what a crash left in the hot journals is in LMDB by now. */
function nodeParts (config: ResolvedConfig, store: Store, clock: Clock, log: Logger, adminToken: string) {
  const outbox = new Outbox(store, clock)
  const metrics = new Metrics(0, store.held)
  adoptMetaSettings(store)
  adoptCampaignDelivery(store)
  indexBookedDays(store, config.cluster?.partitions ?? 1)
  indexClaimDays(store)
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
  return {
    outbox,
    metrics,
    inventory,
    objects,
    moderator,
    sealer,
    notices,
    funnel,
    deliveries,
    claims,
    journals,
    intake,
    auth: new Authenticator(store, clock, adminToken),
    sender: new NoticeSender({ store, notices, clock, log, metrics, kinds }, { allowPrivate: config.allowPrivateCallbackUrls, dnsServers: config.dnsServers }),
    webhooks: new WebhookDispatcher({ store, outbox, notices, deliveries, clock, log }),
    analytics: analyticsOf(config, store, funnel, metrics, log),
    reports: new ResultCache(clock, log, config.reportCacheSeconds * 1000, config.reportWaitMs),
    limiter: new RateLimiter(clock, undefined, { leased: config.cluster !== undefined }),
    idempotency: new Idempotency(store, clock)
  }
}

/**
 * Takes the data directory and the port (or refuses to start), opens the store and starts HOT_THREADS hot threads
 * that serve every route on that port (src/hot/thread.ts). This thread supervises them and runs what must run
 * once: moderation, the notice sender, the webhook dispatcher, the analytics process and the periodic jobs, so that
 * none of it competes with a request.
 */
export async function startService ({ config: given, clock = systemClock, log = createLogger(given.logLevel) }: ServiceOptions): Promise<Service> {
  let cluster: ClusterNode | undefined
  let capacity: ReturnType<typeof startCapacity> | undefined
  let proofRetries: ReturnType<typeof startProofRetries> | undefined
  // The catalog's jobs book through the logs too (a hold's lapse), once the node has joined.
  const bookings = new RehearsedBookings({
    decide: async (base, commands) => await capacity!.decide(base, commands),
    expire: (claim) => capacity?.expire(claim)
  }, given.cluster?.partitions ?? 1)
  // The partitions whose spots this node decides: none until it owns their logs and has read their bids.
  const served = new ServedPartitions(given.cluster?.partitions ?? 1)
  const { lock, claimed, store, config, url } = await takeNode(given, log, (campaignId, wantMicros) => cluster?.leaseBudget(campaignId, wantMicros), served, {
    bookings,
    settle: async (partition, command) => await cluster?.settle(partition, command) ?? false,
    prove: async (plays) => cluster === undefined ? undefined : await proposePlays(cluster, store, plays)
  })
  const { port, adminToken } = config
  const parts = nodeParts(config, store, clock, log, adminToken)
  const { moderator, notices, funnel, claims, sender, webhooks, analytics, idempotency, deliveries } = parts
  const replicated = new ShippedChanges()
  const ops = { ...parts, config, clock, log, store, cluster: () => cluster, capacity: () => capacity, threads: () => threads }
  const dashboard = dashboardFor(ops, clock.now())
  const threads: Supervisor = new Supervisor({
    config,
    shared: { clock: clock.share?.() ?? { kind: 'system' }, generations: store.generations, limits: parts.limiter.buffer, inFlight: idempotency.buffer, funnel: funnel.buffer, claims: { buffer: claims.buffer, counters: claims.counters }, shipped: replicated.buffer, journals: parts.journals, served: served.buffer }
  }, supervisorOperations(ops, dashboard), log, () => store.refresh())
  // The routes as the hot threads build them, for the OpenAPI document's tests and tools; this thread serves none.
  const routes = allRoutes({ ...parts, config, clock, store, impIds: new ImpIds(store), proofSigner: ProofSigner.forService(config), journal: openHotJournal(parts.intake, config.dataDir, config.durability, 'supervisor', new JournalTurns(parts.journals, 0)), scrape: () => Promise.resolve(''), dashboard, endThread: () => Promise.resolve(false), shared: broadcast(() => {}), readiness: () => ({ checks: {} }) })
  try {
    cluster = await joinClusterOf({ ...parts, config, clock, log, store, shipped: replicated, threads, served, url })
    if (cluster !== undefined) {
      capacity = startCapacity(store, cluster, config.cluster!, log)
      proofRetries = startProofRetries(store, cluster, config.cluster!.ackTimeoutMs, log)
    }
    await threads.start(config.hotThreads)
    claimed.release()
  } catch (err) {
    claimed.release()
    await threads.close().catch(() => 0)
    capacity?.stop()
    proofRetries?.stop()
    await cluster?.close().catch(() => {})
    await store.close()
    await lock.release()
    throw err
  }
  moderator.resume()
  indexWaitingBuys(store)
  sender.start()
  webhooks.start()
  analytics.start()
  const stopRelay = relayAnalyticsState(analytics, (state) => threads.notify('analytics', state))
  /** Whatever the hot threads handed over before now has arrived (each answers after the messages it sent before). */
  const flushed = () => threads.call('flushed')
  const jobs = await startJobs({ ...parts, config, clock, log, store, threads, ...(cluster !== undefined ? { cluster: { node: cluster, shipped: replicated } } : {}), hourly: [() => idempotency.sweep(), () => deliveries.sweep(clock.now())] })
  log.info('listening', { url, base_url: config.baseUrl, data_dir: config.dataDir, hot_threads: config.hotThreads })
  let closing: Promise<void> | undefined
  return {
    config,
    url,
    port,
    adminToken,
    store,
    outbox: parts.outbox,
    routes,
    runJobs: jobs.runJobs,
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
        jobs.stop()
        stopRelay()
        await moderator.close()
        webhooks.close()
        await sender.close()
        await analytics.close()
        capacity?.stop()
        proofRetries?.stop()
        await cluster?.close()
        await store.close()
        await lock.release()
        log.info('stopped', { in_flight_abandoned: abandoned })
      })()
      return closing
    }
  }
}
