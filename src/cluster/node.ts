import { randomBytes } from 'node:crypto'
import type { ClusterConfig } from '../config.js'
import type { Logger } from '../log.js'
import type { ObjectStore } from '../store/objects.js'
import type { Store } from '../store/store.js'
import type { RateLimiter, WindowAsk } from '../http/rate-limit.js'
import { ChangeApplier, type ForgetHook } from './applier.js'
import type { AppliedHook } from './row-writes.js'
import { BUDGET_LOG, budgetMachine, BudgetGrants, type BudgetBook } from './budget-grants.js'
import { Checkpoints } from './checkpoints.js'
import { connectEngine, untilAnswered } from './engine.js'
import { ObjectReplica } from './objects.js'
import { publishOwners } from './forward.js'
import { ApplyTurns } from './apply-turns.js'
import { ensureLogStream, PartitionGap, PartitionLog, partitionStream, type PartitionMachine } from './partition-log.js'
import { PartitionOwners } from './partition-owners.js'
import { LOG_STOPPED } from './readiness.js'
import type { Verdict } from './records.js'
import type { SettleCommand } from '../bidding/records.js'
import { RecordLocks } from './record-locks.js'
import { ChangeShipper } from './shipper.js'
import { FencedCommits } from './fenced-commits.js'
import type { ShippedChanges } from './shipped.js'
import { NameClaims, nameMachine, NAMES_LOG } from './name-claims.js'
import { RateGrants, rateMachine, RATES_LOG } from './rate-grants.js'
import type { ServedPartitions } from './served-partitions.js'

/** How often a node looks which partitions' logs it owns, to hold their bids and say where their owners are. */
const HOLDINGS_MS = 250

/** How long, in a log's time, its owner's beats may stop before a takeover is accepted. */
const LOG_LEASE_MS = 10_000

/**
 * How long a checkpoint's store, read or listing may take before it is taken as lost (src/cluster/checkpoints.ts): an
 * object whose chunks are gone is waited for without end.
 */
const CHECKPOINT_TIMEOUT_MS = 30_000

/**
 * How long after its proposal a command may land in a log and still be applied: a publish buffered by a client cut off
 * from the engine, sent minutes later, takes nothing.
 */
const COMMAND_TTL_MS = 30_000

/** This node's part in a cluster, run by the supervisor. */
export interface ClusterNode {
  /** Ships what the hot threads recorded (they say so after each commit that recorded changes). */
  kick (): void
  /**
   * Claims a name cluster-wide for owner: true when owner holds it now (decided in the names' log,
   * src/cluster/name-claims.ts); a claim older than takeOverAfterMs in log time is taken over (its request is over).
   */
  claim (name: string, owner: string, takeOverAfterMs?: number): Promise<boolean>
  release (name: string, owner: string): Promise<void>
  /**
   * Locks a record cluster-wide for owner, waiting while another holds it: the lock's number once held, false when
   * it stayed taken for the ack timeout (src/cluster/record-locks.ts). Throws when the engine cannot say.
   */
  lock (name: string, owner: string): Promise<number | false>
  unlock (name: string, n: number): void
  /** Asks the engine for more of a rate-limit window; the grant lands in the windows the hot threads share. */
  lease (ask: WindowAsk): void
  /** Asks the engine for the next part of a campaign's budget; the grant lands in this node's delivery row. */
  leaseBudget (campaignId: string, wantMicros: number): void
  /**
   * Resolves true once this node has applied every change the state bucket held when called, and every command of the
   * names' log (the records); false after a second.
   */
  caughtUp (): Promise<boolean>
  /**
   * Proposes an unfenced command to one of the logs this node follows (a booking: src/campaigns/capacity-logs.ts); its
   * verdict once this node has applied it, undefined when the engine did not acknowledge it or it was not applied in
   * time. fresh: no other command carries its key, so none is kept (PartitionEntry's fresh).
   */
  propose (stream: string, key: string, body: unknown, fresh?: boolean): Promise<Verdict | undefined>
  /** Whether this node, in this life, owns one of the logs it follows, as far as it has applied the log. */
  owns (stream: string): boolean
  /**
   * Proposes a settlement of bids, fenced, to their screen's partition's log: true once accepted there, false when
   * refused (this node is not the partition's owner under the epoch where it landed, or a bid was settled before) or
   * not known in time.
   */
  settle (partition: number, command: SettleCommand): Promise<boolean>
  /** How far this node has applied a partition of the screens' log, in the log's time. */
  logTime (partition: number): number

  close (): Promise<void>
}

/** meta key: this data directory's name in the engine, made when it first joined (a node id may be reused by a new disk). */
const INCARNATION = 'cluster:incarnation'

/** This data directory's name in the engine, once it has joined a cluster. */
export function dataIncarnation (store: Store): string | undefined {
  return store.meta.get(INCARNATION) as string | undefined
}

/**
 * Joins the cluster: connects to the engine, ships what this node recorded and did not ship before it stopped, and
 * applies what the other nodes changed meanwhile, before the hot threads serve (startService awaits this).
 */
export async function joinCluster (deps: { cluster: ClusterConfig, store: Store, objects: ObjectStore, shipped: ShippedChanges, limiter: RateLimiter, budgets: BudgetBook, log: Logger, onShipped: () => void, onGranted: () => void, onApplied: AppliedHook, onForget: ForgetHook, logs: Array<{ stream: string, machine: PartitionMachine }>, served: ServedPartitions, url: string, release: (events: unknown[]) => void }): Promise<ClusterNode> {
  const { cluster, store, shipped, log } = deps
  const changes = store.changes
  if (changes === undefined) throw new Error('a cluster node needs a store opened with replicate: true')
  // Names this data directory's changes in the engine's duplicate window: a node id may be reused by a new disk.
  let incarnation = dataIncarnation(store)
  if (incarnation === undefined) {
    const made = incarnation = randomBytes(8).toString('hex')
    store.write(() => store.meta.putSync(INCARNATION, made))
  }
  // What shipped before a restart: everything older than the first change still waiting.
  const first = changes.pending(1)[0]
  shipped.advance(first !== undefined ? first.seq - 1 : changes.recorded)
  const engine = await connectEngine(cluster, log)
  const replica = new ObjectReplica({ bucket: engine.objects, objects: deps.objects, log })
  /** The partitions whose bids this node has read whole (the applier's hold), whose spots it may decide while its lease runs. */
  const read = new Set<number>()
  const onApplied: AppliedHook = (table, key, previous) => {
    replica.applied(table, key as string)
    deps.onApplied(table, key, previous)
  }
  const commits = new FencedCommits({ store, onApplied, writer: incarnation })
  const applier = new ChangeApplier({
    store,
    changes,
    log,
    node: cluster.nodeId,
    incarnation,
    partitions: cluster.partitions,
    onServing: (partition, serving) => { if (serving) read.add(partition); else read.delete(partition) },
    onForget: deps.onForget,
    onApplied,
    fenced: commits,
    repair: (kvKey) => shipper.repair(kvKey)
  })
  const logs = new Map<string, PartitionLog>()
  const shipper = new ChangeShipper({
    store,
    changes,
    engine,
    node: cluster.nodeId,
    incarnation,
    partitions: cluster.partitions,
    lingerMs: cluster.lingerMs,
    log,
    onShipped: (through, bids) => {
      shipped.advance(through)
      applier.landing(bids)
      deps.onShipped()
    },
    release: deps.release,
    beforeShip: (batch) => replica.beforeShip(batch),
    fenced: commits,
    // The names' log is followed once the node has caught up with the state bucket: till then its commits wait.
    commit: async (key, body, proposedAt) => await logs.get(NAMES_LOG)?.propose(key, body, false, cluster.ackTimeoutMs, false, proposedAt).catch(() => undefined),
    logNow: () => logs.get(NAMES_LOG)?.now()
  })
  changes.onCommitted(() => shipper.kick())
  shipper.kick()
  await applier.start(engine)
  replica.resume()
  // This process's life: a command it proposed before a restart is not its to decide now (a claim's commit).
  const self = { node: cluster.nodeId, incarnation: randomBytes(8).toString('hex') }
  const checkpoints = { store: new Checkpoints(engine.checkpoints, engine.jsm, CHECKPOINT_TIMEOUT_MS), every: cluster.checkpointEntries }
  store.write(() => store.meta.removeSync(LOG_STOPPED))
  const onStopped = (stream: string) => (err: Error) => store.write(() => store.meta.putSync(LOG_STOPPED, `${stream}: ${err.message}`))
  const proposeTo = (stream: string, fresh = false) => async (key: string, body: unknown) => await logs.get(stream)!.propose(key, body, false, cluster.ackTimeoutMs, fresh).catch(() => undefined)
  const names = new NameClaims(proposeTo(NAMES_LOG), log, cluster.ackTimeoutMs)
  const locks = new RecordLocks(names, store, async (name) => await shipper.copyPending(name))
  const budgets = new BudgetGrants({ store, book: deps.budgets, propose: proposeTo(BUDGET_LOG), log })
  const rates = new RateGrants({ propose: proposeTo(RATES_LOG), limiter: deps.limiter, log, onGranted: deps.onGranted })
  const ownLogs = [
    { stream: NAMES_LOG, machine: nameMachine(store, commits, (name) => locks.changed(name)) },
    {
      stream: BUDGET_LOG,
      machine: budgetMachine(store, cluster.nodeId, {
        granted: (campaignId, micros, seq) => {
          deps.budgets.granted(campaignId, micros, seq)
          budgets.credited(campaignId)
        }
      })
    },
    { stream: RATES_LOG, machine: rateMachine(store) }
  ]
  const turns = new ApplyTurns(store, deps.log)
  for (const { stream, machine } of [...ownLogs, ...deps.logs]) {
    // Nodes starting at once create the same streams, and a busy engine answers late: each is waited out, as writes
    // wait for their quorum; a gap in a log is not, since no wait closes it.
    await untilAnswered(`creating the log ${stream}`, async () => await ensureLogStream(engine.jsm, stream, cluster.replicas), deps.log)
    const log = new PartitionLog({ js: engine.js, jsm: engine.jsm, store, stream, machine, self, leaseMs: LOG_LEASE_MS, ttlMs: COMMAND_TTL_MS, ackTimeoutMs: cluster.ackTimeoutMs, log: deps.log, onStopped: onStopped(stream), checkpoints, turns })
    let gap: PartitionGap | undefined
    await untilAnswered(`following the log ${stream}`, async () => await log.start().catch((err: unknown) => {
      if (!(err instanceof PartitionGap)) throw err
      gap = err
    }), deps.log)
    if (gap !== undefined) throw gap
    // A log kept whole (no owner, no checkpoint: the proofs') is read through first, however long: what it decides is
    // not served from a copy that lacks part of it.
    if (!log.owned) await untilAnswered(`reading the log ${stream} through`, async () => await log.readThrough(), deps.log)
    logs.set(stream, log)
  }
  const partitionOfLog = new Map(Array.from({ length: cluster.partitions }, (_, p) => [partitionStream(p), p]))
  const owners = new PartitionOwners({
    nc: engine.nc,
    logs,
    self,
    url: cluster.nodeUrl ?? deps.url,
    leaseMs: LOG_LEASE_MS,
    ackTimeoutMs: cluster.ackTimeoutMs,
    log,
    onLeaseEnd: (stream) => {
      const p = partitionOfLog.get(stream)
      if (p !== undefined) deps.served.set(p, 0, true)
    }
  })
  owners.start()
  // A partition's bids are applied here while this node owns its log, and its spots decided here once they are read,
  // until its lease runs out unless a beat renews it; the hot threads forward a player's request for another partition
  // to its owner's URL, and a report on a spot to the node that decided it (src/cluster/forward.ts).
  const holdings = setInterval(() => {
    for (const [stream, p] of partitionOfLog) {
      const owns = logs.get(stream)?.owns() === true
      if (owns) applier.hold(engine, p)
      else applier.release(p)
      deps.served.set(p, read.has(p) ? owners.leaseUntil(stream) ?? 0 : 0, owns)
    }
    publishOwners(store, owners.urls([...partitionOfLog.keys()].map((stream) => logs.get(stream)?.mark().owner?.node)), owners.members())
  }, HOLDINGS_MS)
  holdings.unref()
  // Retries what the engine did not acknowledge (a member lost, no quorum for a while).
  const timer = setInterval(() => shipper.kick(), 1000)
  timer.unref()
  // Budget parts this node holds and no longer spends, given back for the nodes that decide the campaign's plays now.
  const givingBack = setInterval(() => budgets.giveBackIdle(performance.now()), 1000)
  givingBack.unref()
  log.info('joined the cluster', { node: cluster.nodeId, engine: cluster.natsUrls, applied_revision: applier.applied })
  return {
    kick: () => shipper.kick(),
    claim: (name, owner, takeOverAfterMs) => names.claim(name, owner, takeOverAfterMs),
    release: (name, owner) => names.release(name, owner),
    lock: (name, owner) => locks.lock(name, owner, cluster.ackTimeoutMs),
    unlock: (_name, n) => locks.unlock(n),
    // The state bucket's rows and the records (the names' log's commands) alike: what another node wrote a moment ago.
    caughtUp: async () => (await Promise.all([applier.caughtUp(engine, 1000).catch(() => false), logs.get(NAMES_LOG)!.caughtUp(1000)])).every(Boolean),
    async propose (stream, key, body, fresh = false) {
      if (!logs.has(stream)) throw new Error(`this node follows no log ${stream}`)
      return await proposeTo(stream, fresh)(key, body)
    },
    owns: (stream) => logs.get(stream)?.owns() ?? false,
    logTime: (partition) => logs.get(partitionStream(partition))?.mark().log_time ?? 0,
    async settle (partition, command) {
      const log = logs.get(partitionStream(partition))
      if (log === undefined) return false
      const verdict = await log.propose(command.key, { ...command, keep_ms: cluster.bookKeepMs }, true, cluster.ackTimeoutMs, true).catch(() => undefined)
      return verdict?.status === 'accepted'
    },

    lease: (ask) => rates.ask(ask),
    leaseBudget: (campaignId, wantMicros) => budgets.ask(campaignId, wantMicros),
    async close () {
      clearInterval(timer)
      clearInterval(givingBack)
      clearInterval(holdings)
      owners.stop()
      for (const l of logs.values()) l.stop()
      applier.stop()
      replica.stop()
      await shipper.idle()
      await engine.close()
    }
  }
}
