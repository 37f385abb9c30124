import type { AnalyticsSource } from '../analytics/source.js'
import type { SettleCommand } from '../bidding/records.js'
import type { BookingCommand, BookingDecisions } from '../campaigns/capacity-logs.js'
import type { Params } from '../analytics/sql.js'
import type { ClockShare } from '../clock.js'
import type { ResolvedConfig } from '../config.js'
import type { Dashboard } from '../generated/types.js'
import type { MetricsSnapshot } from '../http/metrics.js'
import type { WindowAsk } from '../http/rate-limit.js'
import type { ModerationReply } from '../moderation/types.js'
import type { ProofCommand, ProofVerdict } from '../proof/records.js'

/**
 * The operations between the supervisor and its hot threads, each declared once with its arguments and its answer:
 * both ends of the channel (src/hot/rpc.ts) are typed from these. A call answers; a note is one-way (logs,
 * wake-ups, hand-overs after a commit).
 */

/** What a hot thread asks of the supervisor, which holds the one connection to the engine, ClickHouse and moderation. */
export interface SupervisorCalls {
  /** Claims a name cluster-wide (a cluster node only). */
  claim: (name: string, owner: string, takeOverAfterMs?: number) => boolean
  release: (name: string, owner: string) => void
  /** Locks a record cluster-wide: the lock's number, or false while another holds it (a cluster node only). */
  lock: (name: string, owner: string) => number | false
  /** Whether this node holds what the cluster acknowledged while it was away (false on a single node). */
  caughtUp: () => boolean
  /** Decides a booking request's rehearsed commands in the logs (a cluster node only). */
  book: (base: string, commands: BookingCommand[]) => BookingDecisions
  /** Proposes a committed settlement of bids to their partition's log: whether it was accepted (a cluster node only). */
  settle: (partition: number, command: SettleCommand) => boolean
  /** Proposes plays to the proof log: their verdicts, or undefined when not all known in time (a cluster node only). */
  prove: (plays: ProofCommand[]) => ProofVerdict[] | undefined
  analyze: (url: string, declaredType: string) => ModerationReply
  query: (sql: string, params?: Params, timeoutMs?: number) => Array<Record<string, unknown>>
  dashboard: () => Dashboard
  /** Ends thread n as a crash does (the operator's POST): whether it was listening. */
  endThread: (thread: number) => boolean
  /** Every thread's metrics, rendered for /metrics. */
  scrape: () => string
}

export interface SupervisorNotes {
  listening: (port: number) => void
  log: (line: string) => void
  /** This thread's commits recorded changes for the other nodes. */
  replicate: () => void
  unlock: (name: string, n: number) => void
  lease: (ask: WindowAsk) => void
  budget: (campaignId: string, wantMicros: number) => void
  /** Asks the claims log to let a hold lapse. */
  expire: (claim: string) => void
  moderate: (creativeId: string) => void
  outbox: () => void
  /** Notices queued, the earliest due time of each origin. */
  notices: (due: Array<[string, number]>) => void
  broadcast: (channel: string, key: string, value: unknown) => void
}

/** What the analytics process's state is, as the threads' routes report it. */
export type AnalyticsState = Pick<AnalyticsSource, 'backend' | 'lastError'>

/** What the supervisor asks of each hot thread. */
export interface ThreadCalls {
  snapshot: (reset?: boolean) => MetricsSnapshot
  runJobs: () => { demoted: number, offline: number }
  settled: () => void
  /** Everything this thread acknowledged before the call is applied to LMDB when it answers. */
  flushed: () => boolean
  stopAccepting: () => void
  /** The requests still in flight when the grace ended. */
  finish: () => number
  close: () => void
}

export interface ThreadNotes {
  analytics: (state: AnalyticsState) => void
  broadcast: (channel: string, key: string, value: unknown) => void
  /** The engine holds more of this node's changes. */
  shipped: () => void
  /** The engine granted rate-limit windows. */
  granted: () => void
  /** Stop at once, as a crash does. */
  end: () => void
}

/** The supervisor's end of the channel. */
export interface SupervisorSide { calls: SupervisorCalls, notes: SupervisorNotes }
/** A hot thread's end of the channel. */
export interface ThreadSide { calls: ThreadCalls, notes: ThreadNotes }

/** The memory every hot thread shares with the supervisor (each part owned by the class that reads it). */
export interface HotShared {
  clock: ClockShare
  /** Store: the cached tables' generations. */
  generations: SharedArrayBuffer
  /** RateLimiter: the windows. */
  limits: SharedArrayBuffer
  /** Idempotency: keys in flight. */
  inFlight: SharedArrayBuffer
  /** FunnelLog: ids and the backlog count. */
  funnel: SharedArrayBuffer
  /** ScreenClaims: the screens being decided, the release count waiting threads sleep on, intakes being applied. */
  claims: { buffer: SharedArrayBuffer, counters: SharedArrayBuffer }
  /** ShippedChanges: how far a cluster node's changes are held by the engine. */
  shipped: SharedArrayBuffer
  /** JournalTurns: which threads hold journaled writes not applied yet, and their turns applied. */
  journals: SharedArrayBuffer
  /** ServedPartitions: the partitions of the screens a cluster node decides the spots of now. */
  served: SharedArrayBuffer
}

/** What a hot thread starts from (workerData). */
export interface HotThreadData {
  /** 1..HOT_THREADS. */
  thread: number
  config: ResolvedConfig
  shared: HotShared
}
