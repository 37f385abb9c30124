import { createHash, randomBytes } from 'node:crypto'
import { DeliverPolicy, RetentionPolicy, StorageType, type ConsumerMessages, type JetStreamClient, type JetStreamManager, type JsMsg, type StreamInfo } from 'nats'
import { IDEMPOTENCY_TTL_MS } from '../http/idempotency.js'
import { within } from '../retry.js'
import { SharedQuestion } from './shared-question.js'
import type { Logger } from '../log.js'
import type { Store } from '../store/store.js'
import { readCheckpoint, restoreCheckpoint, type Checkpoints, type LogTable } from './checkpoints.js'
import { MarkWaiters } from './mark-waiters.js'
import { Opens } from './opens.js'
import { ApplyTurns, type TurnWork } from './apply-turns.js'
import type { PartitionMark, PartitionOwner, Verdict } from './records.js'

// A partition's log (docs/architecture.md, "Next: screens owned by partitions, fenced by the log"): commands appended
// to one stream, applied in its order by every node that holds the partition, each decided from the partition's rows
// and log time alone. Exclusivity rests on the stream's total order of appends, which nats-server 2.9.10 keeps: no
// expected-sequence header, no KV compare-and-set, no message-id deduplication, no read a follower may answer.

/** An entry of a partition's log: a takeover, the owner's beat, the owner's hand-over, or a command. */
export type PartitionEntry =
  | { t: 'own', epoch: number, node: string, incarnation: string }
  | { t: 'beat', epoch: number, node: string, incarnation: string }
  | { t: 'give', epoch: number, node: string, incarnation: string }
  | {
    t: 'cmd'
    /** The command's natural key: the same command retried, through any node, has the same key. */
    key: string
    /** Whether only the partition's owner under the current epoch may make it (a spot decision), or anyone (a booking). */
    fenced: boolean
    /**
     * A command whose key no later command carries (a spot's settlement): no key is kept for it, and its verdict is
     * kept only in its proposer's memory, for the proposer alone reads it.
     */
    fresh?: true
    epoch: number
    node: string
    incarnation: string
    /** When it was proposed (the proposer's clock): one that lands later than this plus the time to live is refused. */
    proposed_at: number
    body: unknown
  }

/** Where a command is applied: its log, its sequence, log time, and the node (in one life) that appended it. */
export interface AppliedAt {
  log: string
  seq: number
  logTime: number
  from: PartitionOwner
}

/** What a log's rows do with a command apply has let through: its verdict, written in the apply transaction. */
export interface PartitionMachine {
  apply (body: unknown, at: AppliedAt): Verdict
  /**
   * How long, in log time, a command's key keeps a second command with it from running (VERDICT_KEEP_MS unless
   * said): a machine whose proposers make a new key for every proposal needs only minutes.
   */
  keepKeysMs?: number
  /**
   * Every table whose rows this log's entries alone decide: a machine that lists them has its log checkpointed and
   * trimmed (src/cluster/checkpoints.ts); one that does not keeps its whole log.
   */
  tables?: LogTable[]
  /**
   * After a checkpoint replaced the log's rows on this node, in the same transaction: what the node derives from its
   * own entries, which it never applied (a budget part granted to it), is made good.
   */
  restored?: () => void
  /**
   * A command the log refused before the machine saw it (its proposer fenced, or its landing late), in the apply
   * transaction: what its proposer set aside for it goes.
   */
  refused?: (body: unknown, at: AppliedAt) => void
  /**
   * false: no node owns the log, for none of its commands is fenced and it keeps no checkpoint; no node beats in it,
   * so a log kept whole is not filled with beats.
   */
  owned?: false
}

export interface PartitionLogOptions {
  js: JetStreamClient
  jsm: JetStreamManager
  store: Store
  /** The log's stream (partitionStream(p) for a partition of the screens). */
  stream: string
  machine: PartitionMachine
  /** This node, in this life of its process. */
  self: PartitionOwner
  /** How long, in log time, an owner's beats may stop before another node's takeover is accepted. */
  leaseMs: number
  /** How long after its proposal a command may land and still be applied. */
  ttlMs: number
  /** How long an append waits for the engine's acknowledgement. */
  ackTimeoutMs: number
  log: Logger
  /** The apply loop stopped for good (PartitionGap, or a failing store): the node must not serve as if it followed. */
  onStopped?: (err: Error) => void
  /** Where the log's checkpoints are kept, and how many entries apart its owner stores them. */
  checkpoints?: { store: Checkpoints, every: number }
  /** The transactions its entries are applied in, shared with the node's other logs (a turn's of its own without). */
  turns?: ApplyTurns
}

/**
 * A log could not be read on from this node's mark: entries it needs are gone, the stream is new, or the entry at the
 * mark is not the one this node applied (an engine that lost acknowledged entries and wrote others in their place).
 */
export class PartitionGap extends Error {
  override name = 'PartitionGap'
}

/** How long one pull of a log's consumer waits: nats.js counts two missed heartbeats, each half of it, as a lost consumer. */
const PULL_EXPIRES_MS = 4000

/** How often a node looks whether a log's consumer has stalled, and how long one may deliver nothing. */
const WATCHDOG_MS = 2000
const SILENT_MS = 6000

/** How often a node reading a log through before it serves says how far it has come. */
const READ_THROUGH_SAYS_MS = 5000

/** The pause before a log whose consumer ended is consumed again. */
const REFOLLOW_MS = 500

/** How many times running a gap is met with no checkpoint to close it before the log stops (readiness says so). */
const GAP_TRIES = 10

export const partitionStream = (partition: number): string => `PART_${partition}`
const subjectOf = (log: string): string => `log.${log}`

/**
 * Creates a log's stream when it does not exist. An existing stream's configuration is left as it is: no node's start
 * may shorten what another node still needs to read. No age limit: a log is trimmed only below a checkpoint every
 * holder has applied past.
 */
export async function ensureLogStream (jsm: JetStreamManager, log: string, replicas: number): Promise<void> {
  try {
    await jsm.streams.info(log)
  } catch {
    // Named once, by its creator: of nodes creating it at once, one wins and the others' differing names are refused.
    await jsm.streams.add({ name: log, description: randomBytes(12).toString('hex'), subjects: [subjectOf(log)], num_replicas: replicas, storage: StorageType.File, retention: RetentionPolicy.Limits, max_age: 0, max_msgs: -1, max_bytes: -1 }).catch(async (err: unknown) => {
      if (await jsm.streams.info(log).then(() => false, () => true)) throw err
    })
  }
}

/**
 * Which stream a log is, across its re-creations: the name its creator gave it, or, for a stream created before logs
 * were named, its creation time. nats-server 2.9.10 reports a stream's creation time as each replica made it, so two
 * nodes could read times milliseconds apart for one stream created by two nodes at once.
 */
export function streamIdentity (info: StreamInfo): string {
  return info.config.description !== undefined && info.config.description !== '' ? info.config.description : info.created
}

/** An entry's digest as applied: its sequence and bytes (which name its node, life and proposal time). */
const digestOf = (seq: number, data: Uint8Array): string => createHash('sha256').update(`${seq}:`).update(data).digest('base64url')

const encode = (entry: PartitionEntry): Uint8Array => Buffer.from(JSON.stringify(entry))

/**
 * The state machine's apply, for one entry at its sequence: the takeover and fencing rules, log time, and the
 * deduplication of commands by key. Pure over (mark, whether the key was decided, entry, timestamp) but for the
 * machine's own rows. Every holder applies the same entries in the same order, so every holder decides the same.
 */
export function decideEntry (mark: PartitionMark, decidedKey: boolean, entry: PartitionEntry, timestamp: number, options: { leaseMs: number, ttlMs: number }): { mark: PartitionMark, verdict: Verdict | 'machine' } {
  const logTime = Math.max(mark.log_time, timestamp)
  const next: PartitionMark = { ...mark, log_time: logTime }
  const owner = mark.owner
  const isOwner = owner !== undefined && owner.node === entry.node && owner.incarnation === entry.incarnation
  switch (entry.t) {
    case 'own': {
      if (entry.epoch !== mark.epoch + 1) return { mark: next, verdict: { status: 'refused', reason: 'stale_epoch' } }
      // The owner's node in a new life fences its old one at once: that life ended with the process that lived it.
      const restarted = owner !== undefined && owner.node === entry.node && owner.incarnation !== entry.incarnation
      // The lease is counted in log time: a node whose view of the owner stalled, or whose clock jumped, is refused.
      if (owner !== undefined && !restarted && logTime - mark.last_beat_at <= options.leaseMs) return { mark: next, verdict: { status: 'refused', reason: 'owner_alive' } }
      return { mark: { ...next, epoch: entry.epoch, owner: { node: entry.node, incarnation: entry.incarnation }, last_beat_at: logTime }, verdict: { status: 'accepted' } }
    }
    case 'beat':
      if (entry.epoch !== mark.epoch || !isOwner) return { mark: next, verdict: { status: 'refused', reason: 'fenced' } }
      return { mark: { ...next, last_beat_at: logTime }, verdict: { status: 'accepted' } }
    case 'give': {
      // The owner hands the partition over: the next takeover is accepted at once. Its epoch stays, so that the owner's
      // commands still on their way are refused.
      if (entry.epoch !== mark.epoch || !isOwner) return { mark: next, verdict: { status: 'refused', reason: 'fenced' } }
      const { owner: _given, ...ownerless } = next
      return { mark: { ...ownerless, last_beat_at: logTime }, verdict: { status: 'accepted' } }
    }
    case 'cmd':
      if (decidedKey) return { mark: next, verdict: { status: 'refused', reason: 'duplicate' } }
      if (logTime > entry.proposed_at + options.ttlMs) return { mark: next, verdict: { status: 'refused', reason: 'late' } }
      if (entry.fenced && (entry.epoch !== mark.epoch || !isOwner)) return { mark: next, verdict: { status: 'refused', reason: 'fenced' } }
      return { mark: next, verdict: 'machine' }
  }
}

/** Refusals that are the log's and not the command's outcome: they do not use up its key, so a retry may run it. */
const RETRYABLE = new Set(['fenced', 'late'])

/**
 * How long, in log time, an entry's verdict and its command's key are kept: as long as an Idempotency-Key is, since a
 * booking retried under one proposes the same command key, which must find the first try's outcome.
 */
const VERDICT_KEEP_MS = IDEMPOTENCY_TTL_MS

/**
 * Whether a command's key was used up by an entry younger than keepMs at log time now. Decided from log time and the
 * verdict's own, never from whether the row is still there: nodes remove old rows at different points (trimVerdicts
 * works in batches as entries arrive), and must still decide a late duplicate alike.
 */
export function keyDecided (store: Store, log: string, key: string, now: number, keepMs: number): boolean {
  const seq = store.partitionKeys.get([log, key])
  if (seq === undefined) return false
  return (store.partitionVerdicts.get([log, seq])?.at ?? 0) > now - keepMs
}

/**
 * keepKeysMs for a machine whose proposers make a new key for every proposal (names, budget grants, rate windows): no
 * later command can carry one, so a key is kept only well past the time a command may take to land (ttlMs).
 */
export const FRESH_KEYS_KEEP_MS = 10 * 60_000

/** How long a fresh command's verdict stays in its proposer's memory: past any wait for it (an ack timeout). */
const FRESH_VERDICT_MS = 60_000

/** Verdicts removed by one batch's apply at most: the upkeep stays small beside the entries themselves. */
const TRIM_BATCH = 64

/**
 * Removes a log's verdicts, and the command keys they answer, keepMs old or older at log time now, oldest first
 * (sequence order is log time order: log time never goes back). Rows from before verdicts had a time read as old.
 */
export function trimVerdicts (store: Store, log: string, now: number, keepMs = VERDICT_KEEP_MS): void {
  let n = 0
  for (const { key, value } of store.partitionVerdicts.getRange({ start: [log, 0], end: [log, Infinity] } as never)) {
    if (n++ === TRIM_BATCH || (value.at ?? 0) > now - keepMs) return
    const at = key as [string, number]
    store.partitionVerdicts.removeSync(at)
    if (store.partitionKeys.get([log, value.key]) === at[1]) store.partitionKeys.removeSync([log, value.key])
  }
}

/**
 * One partition's log as this node holds it: appends, the apply loop, and verdicts by key. A command is done only
 * when its verdict, read from the applied rows by its sequence and key, says accepted: never on an acknowledgement
 * alone, which a paused or fenced writer also gets.
 */
export class PartitionLog {
  readonly #o: PartitionLogOptions
  readonly #applied = new MarkWaiters()
  readonly #turns: ApplyTurns
  #messages: ConsumerMessages | undefined
  #stopped = false
  #failure: Error | undefined
  /** The mark as last committed: this log's apply is its only writer on this node. */
  #mark: PartitionMark | undefined
  /** Entries delivered and not applied yet: applied together, on the next turn. */
  #arrived: JsMsg[] = []
  /**
   * The log time of the newest entry applied while it was the log's head, and when (performance.now()): a command is
   * stamped with log time estimated from it, so a node whose wall clock is off by a minute does not have every
   * command refused late, nor let its late ones through.
   */
  #head: { logTime: number, at: number } | undefined
  /** The newest sequence the engine acknowledged for this node's own appends. */
  #acked = 0
  /** When the consumer last delivered an entry (or was opened), in performance.now() milliseconds. */
  #delivered = 0
  #lastChecked = -1
  #watchdog: NodeJS.Timeout | undefined
  /**
   * The entry of this node's last checkpoint (the mark at which it came to own the log, or restored one, until then),
   * whether one is being stored, and whether the node owned the log at its last apply.
   */
  #checkpointed = 0
  #checkpointing = false
  #owned = false
  /** A checkpoint is being restored: a consumer that ends meanwhile is not followed again. */
  #restoring = false
  readonly #opens = new Opens()
  /** The verdicts of this life's fresh commands, by sequence, with when they were applied (performance.now()). */
  readonly #fresh = new Map<number, { key: string, verdict: Verdict, at: number }>()
  /** "Which sequence is last", asked of the engine once for the callers catching up at the same moment. */
  readonly #heads: SharedQuestion<number>

  constructor (options: PartitionLogOptions) {
    this.#o = options
    this.#turns = options.turns ?? new ApplyTurns(options.store)
    this.#heads = new SharedQuestion(async () => (await options.jsm.streams.info(options.stream)).state.last_seq)
  }

  /** The log as this node has applied it (a fresh mark before the first entry). */
  mark (): PartitionMark {
    return this.#mark ??= this.#o.store.partitionMarks.get(this.#o.stream) ?? { stream_created: '', applied: 0, digest: '', log_time: 0, epoch: 0, last_beat_at: 0 }
  }

  /** Whether the log has owners at all (PartitionMachine's owned). */
  get owned (): boolean {
    return this.#o.machine.owned !== false
  }

  /** Whether this node, in this life, owns the partition as of what it has applied. */
  owns (): boolean {
    const owner = this.mark().owner
    return owner !== undefined && owner.node === this.#o.self.node && owner.incarnation === this.#o.self.incarnation
  }

  /**
   * Follows the log from the entry after this node's mark. Throws PartitionGap when that entry is gone (trimmed past
   * the mark), the stream is not the one the mark was applied from, or the entry at the mark is not the one this node
   * applied: the log must be rebuilt, not read on.
   */
  async start (): Promise<void> {
    const { jsm, stream: log, store } = this.#o
    const info = await jsm.streams.info(log)
    const gap = this.#gapIn(info)
    if (gap !== undefined) await this.#restore(gap, info)
    const mark = this.mark()
    if (mark.applied > 0 && mark.applied >= info.state.first_seq) {
      const at = await jsm.streams.getMessage(log, { seq: mark.applied }).catch(() => undefined)
      // Gone since the stream was read: trimmed below a checkpoint meanwhile, which the node reads on from.
      if (at === undefined) await this.#restore(new PartitionGap(`${log}'s entry ${mark.applied} was trimmed as this node started`), await jsm.streams.info(log))
      else if (digestOf(at.seq, at.data) !== mark.digest) throw new PartitionGap(`${log}'s entry ${mark.applied} is not the one this node applied`)
    }
    if (this.mark().stream_created === '') {
      const created = { ...this.mark(), stream_created: streamIdentity(info) }
      store.write(() => store.partitionMarks.putSync(log, created))
      this.#mark = created
    }
    await this.#consume(info)
    this.#watchdog = setInterval(() => this.#check(), WATCHDOG_MS)
    this.#watchdog.unref()
  }

  /** Why this node cannot read the stream on from its mark: created again since, or trimmed past the mark. */
  #gapIn (info: StreamInfo): PartitionGap | undefined {
    const { stream: log } = this.#o
    const mark = this.mark()
    if (mark.stream_created !== '' && mark.stream_created !== streamIdentity(info)) return new PartitionGap(`${log} was created again (${streamIdentity(info)}); this node applied ${mark.stream_created}'s`)
    if (info.state.first_seq > mark.applied + 1 && (info.state.messages > 0 || info.state.first_seq > 1)) return new PartitionGap(`${log} starts at ${info.state.first_seq}; this node applied through ${mark.applied}`)
    return undefined
  }

  /**
   * This node cannot read the log on from its mark (gap): its rows of the log are replaced by the newest checkpoint of
   * the stream (as info, read since the gap was found, says it is) that reaches its first entry; without one, the gap
   * stands, and the log must be rebuilt by hand.
   */
  async #restore (gap: PartitionGap, info: StreamInfo): Promise<void> {
    const { store, stream: log, machine, checkpoints } = this.#o
    if (checkpoints === undefined || machine.tables === undefined) throw gap
    const checkpoint = await checkpoints.store.get(log, streamIdentity(info), info.state.first_seq)
    if (checkpoint === undefined) throw gap
    const mark = this.mark()
    // Past it already (the gap closed by another restore): nothing to replace.
    if (mark.stream_created === streamIdentity(info) && checkpoint.mark.applied <= mark.applied) return
    const tables = machine.tables
    store.write(() => {
      restoreCheckpoint(store, log, checkpoint, tables)
      machine.restored?.()
    })
    this.#mark = checkpoint.mark
    this.#checkpointed = checkpoint.mark.applied
    this.#o.log.warn('log: read on from its checkpoint', { log, reason: gap.message, checkpoint: checkpoint.mark.applied })
    this.#applied.reached(checkpoint.mark.applied)
  }

  /**
   * The owner stores a checkpoint every `every` entries, counted from when it came to own the log, and then trims the
   * log below a checkpoint at least `every` entries older: a node that far behind reads on, one further behind starts
   * from the newest checkpoint.
   */
  #checkpoint (): void {
    const { store, stream: log, machine, checkpoints, jsm } = this.#o
    if (checkpoints === undefined || machine.tables === undefined) return
    const mark = this.mark()
    const owns = this.owns()
    if (owns && !this.#owned) this.#checkpointed = mark.applied
    this.#owned = owns
    if (!owns || this.#checkpointing || mark.applied - this.#checkpointed < checkpoints.every) return
    this.#checkpointing = true
    this.#checkpointed = mark.applied
    const checkpoint = readCheckpoint(store, log, mark, machine.tables, mark.log_time - this.#keepMs())
    checkpoints.store.put(log, checkpoint, checkpoints.every)
      .then(async (below) => { if (below > 0) await jsm.streams.purge(log, { seq: below + 1 }) })
      .catch((err: unknown) => this.#o.log.warn('log: a checkpoint was not stored; the log is trimmed after the next', { log, error: err instanceof Error ? err.message : String(err) }))
      .finally(() => { this.#checkpointing = false })
  }

  /** Consumes the log from the entry after this node's mark; known: the stream as just read (at start). */
  async #consume (known?: StreamInfo): Promise<void> {
    const { js, jsm, stream: log } = this.#o
    // A stream created again while this node followed it would deliver its own entries 1, 2... as if they followed the
    // mark, or skip them as applied. Caught here, when this node opens a consumer; not when nats.js's ordered consumer
    // opens itself again (it does after missed heartbeats, and a stream deleted under it reads on in the new one from
    // the old sequence): deleting a log's stream is an operator's act, after which every node is restarted.
    const current = this.#opens.begin()
    const gap = this.#gapIn(known ?? await jsm.streams.info(log))
    if (!current()) return
    if (gap !== undefined) return this.#readOnAfter(gap)
    const consumer = await js.consumers.get(log, { deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: this.mark().applied + 1 })
    // A consumer lives on one member: when that member dies, nats.js recreates it once two heartbeats are missed. Its
    // default (a heartbeat each 15 s) left a log unapplied for 30 s after a member was killed, and every verdict on it
    // unknown; a pull that expires each 4 s has a heartbeat each 2 s.
    const messages = await consumer.consume({ max_messages: 256, expires: PULL_EXPIRES_MS })
    // Given up on while it opened (the watchdog opened another): the later one follows the log.
    if (!current()) {
      messages.stop()
      return
    }
    this.#messages = messages
    this.#opens.opened()
    this.#delivered = performance.now()
    void (async () => {
      for await (const m of messages) {
        // Stopped for a checkpoint's restore: what it still had buffered is read again after it.
        if (this.#messages !== messages) break
        this.#delivered = performance.now()
        // Entries delivered together apply in one transaction, with what the node's other logs delivered in the same
        // turn: a commit each cost the node most of a booking's CPU.
        if (this.#arrived.push(m) === 1) this.#turns.soon(this.#applyArrived(), (err) => this.#applyFailed(err))
      }
    })().then(() => this.#ended(messages, 'the consumer ended'), (err: unknown) => this.#ended(messages, err))
  }

  /** A consumer ended: followed again if it is still the log's (not one stopped for a checkpoint's restore). */
  #ended (messages: ConsumerMessages, why: unknown): void {
    if (this.#messages === messages) this.#refollow(why)
  }

  /**
   * The consumer ended or failed (its member lost, an election): the log is consumed again from the mark. Entries
   * delivered twice are skipped by their sequence.
   */
  #refollow (why: unknown): void {
    if (this.#stopped || this.#failure !== undefined || this.#restoring) return
    this.#o.log.warn('log: following it again from the last entry applied', { log: this.#o.stream, applied: this.mark().applied, error: why instanceof Error ? why.message : String(why) })
    setTimeout(() => {
      if (this.#stopped || this.#failure !== undefined) return
      // A failure of an open given up on meanwhile is no news: the later open follows the log.
      this.#consume().catch((err: unknown) => { if (this.#opens.pending) this.#refollow(err) })
    }, REFOLLOW_MS)
  }

  /**
   * A consumer can stall without ending (seen after a member's loss, past what its heartbeats catch): one that has
   * not applied an entry this node's own append was acknowledged for, or has delivered nothing for three owner beats
   * (every owned log has one each 2 s), is stopped, and the log consumed again.
   */
  #check (): void {
    if (this.#stopped || this.#failure !== undefined) return
    if (this.#opens.pending) {
      if (this.#opens.overdue()) this.#refollow('opening its consumer did not finish')
      return
    }
    if (this.#messages === undefined) return
    const applied = this.mark().applied
    const behind = this.#acked > applied && applied === this.#lastChecked
    this.#lastChecked = applied
    if (behind) return this.#messages.stop()
    if (performance.now() - this.#delivered <= SILENT_MS) return
    // An owned log has a beat every 2 s, so silence is a stalled consumer; a log without owners is silent while no one
    // appends, and is followed again only if its stream has gone on past what was applied.
    if (this.owned) return this.#messages.stop()
    const messages = this.#messages
    this.#delivered = performance.now()
    this.#o.jsm.streams.info(this.#o.stream).then((info) => {
      if (info.state.last_seq > this.mark().applied && this.#messages === messages) messages.stop()
    }, () => {})
  }

  #fail (err: unknown): void {
    if (this.#stopped || this.#failure !== undefined) return
    this.#failure = err instanceof Error ? err : new Error(String(err))
    this.#messages?.stop()
    this.#o.log.error('log: the apply loop stopped; this node no longer follows it', { log: this.#o.stream, error: this.#failure.message })
    this.#o.onStopped?.(this.#failure)
  }

  /**
   * A turn's work: applies what has arrived by the time the turn runs, and answers what to do once that commits. Run
   * again after the turn threw, it reads the mark as the store holds it: the turn may have committed before it threw.
   */
  #applyArrived (): TurnWork {
    let arrived: JsMsg[] | undefined
    return () => {
      if (arrived !== undefined) this.#mark = undefined
      arrived ??= this.#arrived.splice(0)
      return this.#applyBatch(arrived)
    }
  }

  #applyBatch (batch: JsMsg[]): () => void {
    if (this.#failure !== undefined || batch.length === 0) return () => {}
    const { store, stream } = this.#o
    let mark = this.mark()
    for (const m of batch) mark = this.#apply(m, mark)
    trimVerdicts(store, stream, mark.log_time, this.#keepMs())
    store.partitionMarks.putSync(stream, mark)
    return () => {
      this.#mark = mark
      this.#forgetFresh()
      // An entry read from the backlog says nothing of the log's present; the head does.
      if (batch[batch.length - 1]!.info.pending === 0) this.#head = { logTime: mark.log_time, at: performance.now() }
      this.#applied.reached(mark.applied)
      this.#checkpoint()
    }
  }

  #applyFailed (err: unknown): void {
    this.#mark = undefined
    if (err instanceof PartitionGap) return this.#readOnAfter(err)
    this.#fail(err)
  }

  /**
   * The log was trimmed past this node while it followed (it fell behind), or created again: on from a checkpoint.
   * What the engine does not answer meanwhile (a heal, a node just woken) is tried again, as a consumer that ended is;
   * a gap no checkpoint closes, GAP_TRIES times running (a listing that lagged a put), stops the log.
   */
  #readOnAfter (gap: PartitionGap, tries = 0): void {
    if (this.#stopped || this.#failure !== undefined || (this.#restoring && tries === 0)) return
    this.#restoring = true
    this.#arrived = []
    const messages = this.#messages
    this.#messages = undefined
    messages?.stop()
    // A consumer still opening would read on from the old mark: the one opened after the restore is the log's.
    this.#opens.abandon()
    const { jsm, stream: log } = this.#o
    jsm.streams.info(log).then(async (info) => await this.#restore(gap, info)).then(async () => {
      this.#restoring = false
      await this.#consume()
    }).catch((err: unknown) => {
      if (err instanceof PartitionGap && (tries >= GAP_TRIES || this.#o.checkpoints === undefined)) {
        this.#restoring = false
        return this.#fail(err)
      }
      // Tried again as a restore (a consume that failed after one included): no refollow meanwhile.
      this.#restoring = true
      setTimeout(() => this.#readOnAfter(gap, tries + 1), REFOLLOW_MS)
    })
  }

  stop (): void {
    this.#stopped = true
    clearInterval(this.#watchdog)
    this.#messages?.stop()
  }

  /** Applies one entry after mark, inside the transaction of its batch; the mark after it. */
  #apply (m: JsMsg, mark: PartitionMark): PartitionMark {
    const { store, stream: log, machine, leaseMs, ttlMs, self } = this.#o
    if (m.seq <= mark.applied) return mark
    if (m.seq !== mark.applied + 1) throw new PartitionGap(`${log}: entry ${m.seq} after ${mark.applied}`)
    const entry = JSON.parse(Buffer.from(m.data).toString('utf8')) as PartitionEntry
    const timestamp = Math.floor(m.info.timestampNanos / 1e6)
    const fresh = entry.t === 'cmd' && entry.fresh === true
    const decidedKey = entry.t === 'cmd' && !fresh && keyDecided(store, log, entry.key, Math.max(mark.log_time, timestamp), this.#keepMs())
    const decided = decideEntry(mark, decidedKey, entry, timestamp, { leaseMs, ttlMs })
    const next: PartitionMark = { ...decided.mark, applied: m.seq, digest: digestOf(m.seq, m.data) }
    const at = { log, seq: m.seq, logTime: next.log_time, from: { node: entry.node, incarnation: entry.incarnation } }
    const body = (entry as { body?: unknown }).body
    const verdict = decided.verdict === 'machine' ? machine.apply(body, at) : decided.verdict
    if (entry.t === 'cmd' && decided.verdict !== 'machine') machine.refused?.(body, at)
    // A beat's verdict is read by no one (the owner appends it and goes on): an owned log has one every 2 s.
    if (entry.t === 'beat') return next
    if (fresh) {
      if (entry.node === self.node && entry.incarnation === self.incarnation) this.#fresh.set(m.seq, { key: entry.key, verdict, at: performance.now() })
      return next
    }
    const key = entry.t === 'cmd' ? entry.key : `${entry.t}:${entry.epoch}:${entry.node}:${entry.incarnation}`
    store.partitionVerdicts.putSync([log, m.seq], { key, verdict, at: next.log_time })
    if (entry.t === 'cmd' && decided.verdict === 'machine' && !RETRYABLE.has(verdict.reason ?? '')) store.partitionKeys.putSync([log, entry.key], m.seq)
    return next
  }

  /** Forgets fresh verdicts no proposer waits for any more (the map is in insertion order, which is sequence order). */
  #forgetFresh (): void {
    const before = performance.now() - FRESH_VERDICT_MS
    for (const [seq, v] of this.#fresh) {
      if (v.at > before) return
      this.#fresh.delete(seq)
    }
  }

  #keepMs (): number {
    return this.#o.machine.keepKeysMs ?? VERDICT_KEEP_MS
  }

  /** Now in log time, as far as this node can tell: its wall clock only until it has seen the log's head. */
  now (): number {
    const head = this.#head
    return head === undefined ? Date.now() : head.logTime + (performance.now() - head.at)
  }

  /** Appends an entry; resolves with its sequence once a majority of the engine holds it. */
  async append (entry: PartitionEntry): Promise<number> {
    const ack = await this.#o.js.publish(subjectOf(this.#o.stream), encode(entry), { timeout: this.#o.ackTimeoutMs })
    this.#acked = Math.max(this.#acked, ack.seq)
    return ack.seq
  }

  /**
   * The verdict of the entry at seq once this node has applied it, if it carries key; undefined when it does not (an
   * acknowledgement naming another entry) or when this node has not applied that far within timeoutMs.
   */
  async verdictAt (seq: number, key: string, timeoutMs: number): Promise<Verdict | undefined> {
    if (this.mark().applied < seq && !await this.#applied.wait(seq, timeoutMs)) return undefined
    const found = this.#fresh.get(seq) ?? this.#o.store.partitionVerdicts.get([this.#o.stream, seq])
    return found?.key === key ? found.verdict : undefined
  }

  /**
   * Resolves once this node has applied the log as far as it stood when asked, saying every few seconds how far it has
   * come: what a log kept whole decides is read through before the node serves it. Throws once the log stopped.
   */
  async readThrough (): Promise<void> {
    const { jsm, stream, log } = this.#o
    const head = (await jsm.streams.info(stream)).state.last_seq
    while (this.mark().applied < head && !await this.#applied.wait(head, READ_THROUGH_SAYS_MS)) {
      if (this.#failure !== undefined) throw this.#failure
      log.info('log: reading it through before serving', { log: stream, applied: this.mark().applied, of: head })
    }
  }

  /**
   * Resolves true once this node has applied the log as far as it stood when asked, false past timeoutMs or when the
   * engine cannot say: a request that must read what another node wrote through the log a moment ago waits for it.
   */
  async caughtUp (timeoutMs: number): Promise<boolean> {
    const head = await within(timeoutMs, `reading ${this.#o.stream}'s head`, this.#heads.answer()).catch(() => undefined)
    if (head === undefined) return false
    return this.mark().applied >= head || await this.#applied.wait(head, timeoutMs)
  }

  /** The outcome of a command key: the verdict that used it up, or undefined while none has. */
  outcomeOf (key: string): Verdict | undefined {
    const seq = this.#o.store.partitionKeys.get([this.#o.stream, key])
    return seq === undefined ? undefined : this.#o.store.partitionVerdicts.get([this.#o.stream, seq])?.verdict
  }

  /**
   * Proposes a command under this node's view of the epoch; its verdict once applied (undefined: unknown yet). A fresh
   * command's key is new (PartitionEntry's fresh): no duplicate is looked for, and no key kept. proposedAt: when it was
   * first proposed, in log time (now() then), for a command proposed again.
   */
  async propose (key: string, body: unknown, fenced: boolean, timeoutMs: number, fresh = false, proposedAt = this.now()): Promise<Verdict | undefined> {
    const { self } = this.#o
    const entry: PartitionEntry = { t: 'cmd', key, fenced, epoch: this.mark().epoch, node: self.node, incarnation: self.incarnation, proposed_at: proposedAt, body }
    if (fresh) entry.fresh = true
    const seq = await this.append(entry)
    const verdict = await this.verdictAt(seq, key, timeoutMs)
    // The same command ran before (a retry whose first try landed): its outcome is the first one's.
    return verdict?.reason === 'duplicate' ? this.outcomeOf(key) : verdict
  }

  /**
   * Tries to take the partition over for the next epoch; true once this node owns it and has applied through its
   * takeover, so that every command the last owner had accepted is in its rows.
   */
  async takeOver (timeoutMs: number): Promise<boolean> {
    const { self } = this.#o
    const epoch = this.mark().epoch + 1
    const seq = await this.append({ t: 'own', epoch, node: self.node, incarnation: self.incarnation })
    const verdict = await this.verdictAt(seq, `own:${epoch}:${self.node}:${self.incarnation}`, timeoutMs)
    return verdict?.status === 'accepted'
  }

  /** The owner's beat: keeps its lease in log time. Resolves with its sequence once the engine holds it. */
  async beat (): Promise<number> {
    const { self } = this.#o
    return await this.append({ t: 'beat', epoch: this.mark().epoch, node: self.node, incarnation: self.incarnation })
  }

  /** The owner hands the partition over (another node is to own it); true once this node has applied the hand-over. */
  async give (timeoutMs: number): Promise<boolean> {
    const { self } = this.#o
    const epoch = this.mark().epoch
    const seq = await this.append({ t: 'give', epoch, node: self.node, incarnation: self.incarnation })
    return (await this.verdictAt(seq, `give:${epoch}:${self.node}:${self.incarnation}`, timeoutMs))?.status === 'accepted'
  }

  /**
   * Whether a takeover would be accepted now, as far as this node can tell: no owner, or its beats stopped a lease
   * ago in log time (estimated; apply decides), or the owner is this node's previous life.
   */
  takeable (): boolean {
    const { owner, last_beat_at: beatAt } = this.mark()
    if (owner === undefined) return true
    if (owner.node === this.#o.self.node) return owner.incarnation !== this.#o.self.incarnation
    return this.now() - beatAt > this.#o.leaseMs
  }
}
