import { parentPort, workerData } from 'node:worker_threads'
import { ResultCache, type Outcome } from '../analytics/results.js'
import { Authenticator } from '../auth/authenticate.js'
import { KeySealer } from '../auth/sealed-keys.js'
import { clockOf } from '../clock.js'
import type { AnalyticsSource } from '../analytics/source.js'
import { FunnelLog } from '../events/funnel.js'
import { openHotJournal } from './journal.js'
import { ScreenClaims } from '../bidding/auction/claims.js'
import { ImpIds } from '../inventory/adslots/imp-ids.js'
import type { Lifecycle } from '../http/request-cycle.js'
import { Idempotency } from '../http/idempotency.js'
import { Metrics } from '../http/metrics.js'
import { RateLimiter } from '../http/rate-limit.js'
import { listen } from '../http/server.js'
import { Inventory } from '../inventory/inventory.js'
import { inventoryOptions } from '../inventory/options.js'
import { createLogger } from '../log.js'
import { onNextTurn } from '../next-turn.js'
import { Notices } from '../notify/notices.js'
import { ProofSigner } from '../proof/signer.js'
import { allRoutes } from '../routes.js'
import { JournalTurns } from '../store/journal-turns.js'
import { ObjectStore } from '../store/objects.js'
import { Outbox } from '../store/outbox.js'
import { openStore } from '../store/store.js'
import { DeliveryLog } from '../webhooks/delivery-log.js'
import { broadcast } from './broadcast.js'
import { ServedPartitions } from '../cluster/served-partitions.js'
import type { HotThreadData, SupervisorSide, ThreadSide } from './operations.js'
import { Rpc, type Port } from './rpc.js'
import { ShippedChanges } from '../cluster/shipped.js'
import { nodeLinkThrough } from '../cluster/node-link.js'
import { clusterCoordination } from '../cluster/request-coordination.js'
import { RehearsedBookings } from '../campaigns/rehearsed-bookings.js'
import { clusterShare } from '../cluster/share.js'
import { replicationChecks } from '../cluster/readiness.js'
import { leasedLeft } from '../campaigns/delivery.js'
import { ALONE } from '../store/store.js'
import { localCoordination } from '../http/coordination.js'

/**
 * A hot thread: one uWS app on the shared port (SO_REUSEPORT; the kernel spreads connections over the threads) with
 * every route, over the one LMDB environment. What must agree across threads lives in shared memory (the clock, rate
 * limits, idempotency keys in flight, cache generations, funnel ids); what only the supervisor runs (moderation,
 * notices and webhooks going out, ClickHouse) is reached by message.
 */
const { thread, config, shared: memory } = workerData as HotThreadData
const port = parentPort as unknown as Port
const analytics: AnalyticsSource & { backend: AnalyticsSource['backend'], lastError: string | undefined } = {
  backend: undefined,
  lastError: undefined,
  query: (sql, params, timeoutMs) => rpc.call('query', sql, params, timeoutMs)
}
const lifecycle: Lifecycle = { draining: false, inFlight: 0, onIdle: undefined }

const rpc = new Rpc<ThreadSide, SupervisorSide>(port, {
  analytics (state) {
    analytics.backend = state.backend
    analytics.lastError = state.lastError
  },
  broadcast: (channel, key, value) => shared.deliver(channel, key, value),
  snapshot: (reset) => metrics.snapshot(clock.now(), reset),
  runJobs: () => inventory.runJobs(),
  shipped: () => shipped.woken(),
  granted: () => link?.rates.woken(),
  settled: () => reports.settled(),
  // Everything this thread acknowledged before the call is applied to LMDB when it answers.
  flushed: () => { journal.flush(); return true },
  stopAccepting: () => stopAccepting(),
  finish,
  close,
  end: () => {
    log.warn('hot thread ended by the operator', { thread })
    stop()
  }
}, () => store.refresh())
const log = createLogger(config.logLevel, (line) => rpc.notify('log', line))
const clock = clockOf(memory.clock)
// A cluster node's campaigns spend the parts of their budgets the engine granted it; the supervisor asks for them.
// Its bookings are decided in the cluster's logs, which its supervisor follows.
const bookings = config.cluster !== undefined ? new RehearsedBookings({ decide: async (base, commands) => await rpc.call('book', base, commands), expire: (claim) => rpc.notify('expire', claim) }, config.cluster.partitions) : undefined
const served = new ServedPartitions(config.cluster?.partitions ?? 1, memory.served)
const share = config.cluster !== undefined ? clusterShare(config.cluster.nodeId, served, { leasedLeft, ask: (campaignId, wantMicros) => rpc.notify('budget', campaignId, wantMicros) }, {
  bookings,
  settle: async (partition, command) => await rpc.call('settle', partition, command),
  prove: async (plays) => await rpc.call('prove', plays)
}) : ALONE
const store = openStore(config.dataDir, { mode: config.durability, syncIntervalMs: 0 }, memory.generations, { replicate: config.cluster !== undefined, share })
// A cluster node's supervisor ships what this thread's commits recorded for the other nodes.
store.changes?.onCommitted(onNextTurn(() => rpc.notify('replicate')))
const shipped = new ShippedChanges(memory.shipped)
const link = config.cluster !== undefined
  ? nodeLinkThrough(shipped, {
    claim: async (name, owner, takeOverAfterMs) => await rpc.call('claim', name, owner, takeOverAfterMs),
    release: async (name, owner) => { await rpc.call('release', name, owner) },
    lock: async (name, owner) => await rpc.call('lock', name, owner),
    unlock: (name, n) => rpc.notify('unlock', name, n),
    lease: (ask) => rpc.notify('lease', ask),
    caughtUp: async () => await rpc.call('caughtUp')
  })
  : undefined
const metrics = new Metrics(thread, store.held)
const outbox = new Outbox(store, clock)
outbox.onAppend(onNextTurn(() => rpc.notify('outbox')))
const notices = new Notices(store)
const due = new Map<string, number>()
const sendDue = onNextTurn(() => {
  rpc.notify('notices', [...due])
  due.clear()
})
notices.onEnqueue((origin, at) => {
  due.set(origin, Math.min(due.get(origin) ?? Infinity, at))
  sendDue()
})
const auth = new Authenticator(store, clock, config.adminToken!)
const inventory = new Inventory(store, outbox, clock, inventoryOptions(config, thread === 1))
const shared = broadcast((channel, key, value) => rpc.notify('broadcast', channel, key, value))
const reports = new ResultCache(clock, log, config.reportCacheSeconds * 1000, config.reportWaitMs, (key, outcome) => shared.send('report', key, outcome))
shared.on('report', (key, value) => reports.received(key, value as Outcome))
const funnel = new FunnelLog(store, memory.funnel, (event) => metrics.recorded(event))
// Handed over once committed: the supervisor's moderator reads the creative the moment the message lands.
const moderator = { schedule: (id: string) => store.afterCommit(() => rpc.notify('moderate', id)), analyze: async (url: string, declaredType: string) => await rpc.call('analyze', url, declaredType) }
const claims = new ScreenClaims(thread, memory.claims)
const turns = new JournalTurns(memory.journals, thread)
const journal = openHotJournal({ store, outbox, notices, funnel, moderator, metrics, claims }, config.dataDir, config.durability, `thread-${thread}`, turns)
// A thread that died held claims until its turn's writes committed, and other threads wait for those writes; they are
// in LMDB now, replayed from its journal.
claims.releaseAll(thread)
turns.applied()
const routes = allRoutes({
  config,
  clock,
  store,
  outbox,
  auth,
  inventory,
  impIds: new ImpIds(store, thread),
  objects: new ObjectStore(config.dataDir, store),
  moderator,
  sealer: KeySealer.open(config.keyEncryptionKey, config.dataDir),
  proofSigner: ProofSigner.forService(config),
  notices,
  deliveries: new DeliveryLog(store),
  funnel,
  journal,
  claims,
  analytics,
  reports,
  metrics,
  scrape: () => rpc.call('scrape'),
  dashboard: () => rpc.call('dashboard'),
  endThread: (n) => rpc.call('endThread', n),
  shared,
  readiness: config.cluster !== undefined ? replicationChecks(config.cluster.nodeId, store, served) : () => ({ checks: {} })
})
const server = await listen(config.host, config.port)
// An error nothing caught ends this thread, and the supervisor starts another. uWS's sockets are closed first: a
// thread whose event loop still holds them cannot end without aborting the whole process.
const die = (err: unknown): void => {
  log.error('hot thread fatal error', { thread, error: err instanceof Error ? err.stack ?? err.message : String(err) })
  stop()
}
/** Ends the thread where it is, with no drain, as a crash does; the supervisor starts another. */
function stop (): never {
  server.closeAll()
  process.exit(1)
}
process.on('uncaughtException', die)
process.on('unhandledRejection', die)
const idempotency = new Idempotency(store, clock, memory.inFlight)
const coordination = link !== undefined && config.cluster !== undefined && bookings !== undefined
  ? clusterCoordination({ link, ackTimeoutMs: config.cluster.ackTimeoutMs, stored: (claim) => idempotency.stored(claim), journal, bookings, served, store, node: config.cluster.nodeId })
  : localCoordination
server.mount(routes, { config, clock, log, store, auth, metrics, lifecycle, limiter: new RateLimiter(clock, memory.limits, { leased: config.cluster !== undefined }), idempotency, coordination })
// Screens' freshness and heartbeat deadlines armed by this thread's requests come due here.
const jobs = setInterval(() => inventory.runJobs(), 1000)
rpc.notify('listening', server.port)

/** Graceful stop, first step: refuse new connections; requests on open ones answer 503 from here on. */
function stopAccepting (): void {
  lifecycle.draining = true
  server.stopListening()
  clearInterval(jobs)
}

/** Second step: the requests in flight finish (up to the grace); resolves with how many did not. */
async function finish (): Promise<number> {
  if (lifecycle.inFlight > 0) {
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, config.shutdownGraceMs)
      lifecycle.onIdle = () => { clearTimeout(timer); resolve() }
    })
  }
  return lifecycle.inFlight
}

/** Last step, once every thread has finished: close the connections left and the store. */
async function close (): Promise<void> {
  // The last reply is still corked inside the uWS callback that finished it; let the loop flush it first.
  await new Promise((resolve) => setImmediate(resolve))
  server.closeAll()
  journal.close()
  await store.close()
}
