import { isDeepStrictEqual } from 'node:util'
import { headers } from 'nats'
import type { Logger } from '../log.js'
import type { Change, ChangeLog, Recorded } from '../store/changes.js'
import type { Store } from '../store/store.js'
import { BOOK_TABLES, EVENTUAL_TABLES, RECORD_TABLES, SNAPSHOT_TABLES, WITH_ROUND } from '../store/tables.js'
import { SIGNALS_SUBJECT, STATE_BUCKET, type Engine } from './engine.js'
import { bookMessages, bookSubject, packedParts } from './book-parts.js'
import { packValue, parseStateKey, stateKey } from './state-keys.js'
import { commitCommand, type CommitCommand, type FencedCommits } from './fenced-commits.js'
import type { Verdict } from './records.js'

/** How often a node writes the latest values of the eventual rows it shipped as signals into the state bucket. */
export const SNAPSHOT_MS = 30_000

/**
 * How often it writes there the book's rows that are not bids (a seat's counters, SNAPSHOT_TABLES): every node reads
 * them there, so GET /stats through any node counts every node's rows this long after they were counted at most.
 */
const BOOK_SNAPSHOT_MS = 1000

/**
 * Snapshot rows whose last written value the shipper remembers at most, the least recently written forgotten first: a
 * seat's counters get a row an hour, so the map would grow for good, and a row forgotten is only written once more with
 * its round the next time it counts money.
 */
const WRITTEN_KEPT = 10_000

/** Transactions' changes published to the engine in one round of acknowledgements. */
const BATCH = 256

/** The rows of a round after which the next lingers (ChangeShipper.#ship): a round that many clients' bids make. */
const LINGER_ROWS = 16

/** How many transactions back a refusal of one written under a lock is kept for its request to read: far past any wait. */
const REFUSALS_KEPT = 10_000

/** The most a command's rows pack to: the engine refuses a message past 1 MB, and a command carries them in base64. */
const COMMIT_BYTES = 512 * 1024

const bytesOf = (rows: unknown[]): number => rows.reduce<number>((n, row) => n + packValue(row).length, 0)

/** Where changes (with their values before) split into parts of at most COMMIT_BYTES: [from, to) each, one row at least. */
function partsOf (changes: Change[], before: unknown[] | undefined): Array<[number, number]> {
  const parts: Array<[number, number]> = []
  let from = 0
  let bytes = 0
  changes.forEach((change, n) => {
    const size = packValue(change).length + (before === undefined ? 0 : packValue(before[n] ?? null).length)
    if (n > from && bytes + size > COMMIT_BYTES) {
      parts.push([from, n])
      from = n
      bytes = 0
    }
    bytes += size
  })
  parts.push([from, changes.length])
  return parts
}

/**
 * Whether a transaction's changes to the rows every request reads go to the names' log, or to the state bucket: one
 * written under a lock, or that wrote a record (RECORD_TABLES), goes there whole, so that its other rows (a seat's first
 * key with the seat) reach the other nodes with it.
 */
const toNames = (entry: Recorded): boolean => entry.fence !== undefined || entry.changes.some(([table]) => RECORD_TABLES.has(table))

/**
 * The longest start of a batch in which no row goes both to the names' log and to the state bucket: the two are not
 * ordered with each other, and a row's later change must land after its earlier one (the rest waits for the next
 * round). Which way each row goes depends on its transactions alone, so a round sent again is cut alike.
 */
function oneWayEach (batch: Recorded[]): Recorded[] {
  const ways = new Map<string, boolean>()
  for (let i = 0; i < batch.length; i++) {
    const entry = batch[i]!
    const way = toNames(entry)
    for (const [table, key] of entry.changes) {
      if (EVENTUAL_TABLES.has(table) || BOOK_TABLES.has(table)) continue
      const kvKey = stateKey(table, key)
      if ((ways.get(kvKey) ?? way) !== way) return batch.slice(0, i)
      ways.set(kvKey, way)
    }
  }
  return batch
}

/** A transaction's rows that go to the names' log. */
interface Logged {
  seq: number
  changes: Change[]
  fence: { name: string, owner: string } | undefined
  before: unknown[] | undefined
}

/**
 * A command a round proposes to the names' log: one transaction written under a lock, or the records' rows of
 * transactions written under none, one after another (one command for all: they are decided alike).
 */
interface Commit {
  /** The first transaction's seq, which names the command; and all of them. */
  seq: number
  seqs: number[]
  /** Where its rows start among the transaction's (a transaction shipped as several commands). */
  offset: number
  key: string
  body: CommitCommand
  changes: Change[]
  /** Under a lock: the rows' values before it, put back if it is refused. */
  before: unknown[] | undefined
}

/**
 * Ships the node's recorded changes (src/store/changes.ts) to the engine, in commit order, and deletes them once the
 * engine has acknowledged every one: a quorum of its members holds them. One shipper per node, so a row's later value
 * is never published before its earlier one.
 *
 * A row of a table every request reads goes to the state bucket as its own KV message, with the id
 * `<incarnation>.<seq>.<n>`: a publish whose acknowledgement was lost and is sent again is dropped by JetStream's
 * duplicate window instead of writing an old value over a newer one from another node. The eventual tables' rows
 * (FEIN, heartbeats: EVENTUAL_TABLES), rewritten every few seconds per screen, go as one message per round to the
 * signals stream, each row's last value of the round once: a message per row cost the cluster ten times one node's
 * CPU per FEIN update (bench/cluster), most of it the engine's and the nodes' work per message. Every SNAPSHOT_MS
 * their latest values are also written to the state bucket, which a node joining reads before it follows the
 * signals. The bids (BOOK_TABLES) go the same way to the book stream, one message per round and partition of their
 * screens, on the partition's subject (book-parts.ts): only the nodes holding a partition consume its subject, so a bid
 * costs a node that neither took it nor owns its screen nothing (bench/cluster); a bid is dead once its imp expires, so
 * the stream, kept that long, is the whole book of bids. The book's other rows, a seat's hourly counters
 * (SNAPSHOT_TABLES), each node's own rows, go only to the state bucket: in the book, every node had to consume every
 * round for them. A change that moves money (a win, a play billed: TableSpec.withRound) goes with its round, so it is
 * in the bucket when its request is answered; bids counted go with the next snapshot, every BOOK_SNAPSHOT_MS, and
 * which rows are due is kept in LMDB with the round's acknowledgement (snapshots_due), so a node killed before its
 * snapshot writes them when it is back. A transaction written under a record's lock goes to the names' log instead, as
 * one command decided there against the lock (fenced-commits.ts), and so does every transaction that changed a record
 * (RECORD_TABLES): the round waits for their verdicts, and keeps the refusals for the requests waiting on them.
 */
export class ChangeShipper {
  readonly #store: Store
  readonly #changes: ChangeLog
  readonly #engine: Engine
  readonly #incarnation: string
  readonly #log: Logger
  readonly #onShipped: (through: number, bids: Array<[Change, number]>) => void
  readonly #beforeShip: (batch: Array<{ changes: Change[] }>) => Promise<void>
  readonly #fenced: FencedCommits
  readonly #commit: (key: string, body: CommitCommand, proposedAt: number) => Promise<Verdict | undefined>
  readonly #logNow: () => number | undefined
  /**
   * Verdicts of commits, by key, with the seq they ship: those of a round that failed are not proposed again when it is
   * sent again (a late refusal stands).
   */
  readonly #decided = new Map<string, { seq: number, verdict: Verdict }>()
  readonly #signals: string
  readonly #node: string
  readonly #partitions: number
  readonly #lingerMs: number
  /** The eventual rows shipped as signals since the last snapshot, by state key. */
  #dirty = new Map<string, Change>()
  readonly #snapshots: NodeJS.Timeout
  readonly #bookSnapshots: NodeJS.Timeout
  /** The value of each of this node's snapshot rows last written to the state bucket (TableSpec.withRound reads it). */
  readonly #written = new Map<string, unknown>()
  /** Each of those rows' last write on its way: the next waits for it, so an older value never lands after a newer. */
  readonly #writing = new Map<string, Promise<unknown>>()
  #snapshottingBook = false
  #running: Promise<void> | undefined
  #again = false
  #failing = false

  /**
   * onShipped: the engine holds the changes through `through`, the round's bids among them (each with its change's
   * seq); beforeShip: what must reach the engine before a batch's rows do (the bytes of the objects they describe);
   * fenced: the rows the names' log decides; commit: proposes a command to it, stamped proposedAt in the log's time,
   * its verdict once applied here; logNow: the log's time now, as far as this node can tell (undefined before it follows
   * the log).
   */
  constructor (deps: { store: Store, changes: ChangeLog, engine: Engine, node: string, incarnation: string, partitions: number, lingerMs: number, log: Logger, onShipped: (through: number, bids: Array<[Change, number]>) => void, beforeShip: (batch: Array<{ changes: Change[] }>) => Promise<void>, fenced: FencedCommits, commit: (key: string, body: CommitCommand, proposedAt: number) => Promise<Verdict | undefined>, logNow: () => number | undefined }) {
    this.#store = deps.store
    this.#changes = deps.changes
    this.#engine = deps.engine
    this.#incarnation = deps.incarnation
    this.#log = deps.log
    this.#onShipped = deps.onShipped
    this.#beforeShip = deps.beforeShip
    this.#signals = `${SIGNALS_SUBJECT}.${deps.node}`
    this.#node = deps.node
    this.#partitions = deps.partitions
    this.#lingerMs = deps.lingerMs
    this.#fenced = deps.fenced
    this.#commit = deps.commit
    this.#logNow = deps.logNow
    this.#snapshots = setInterval(() => { this.#snapshot().catch(() => {}) }, SNAPSHOT_MS)
    this.#snapshots.unref()
    this.#bookSnapshots = setInterval(() => { this.#snapshotBook().catch(() => {}) }, BOOK_SNAPSHOT_MS)
    this.#bookSnapshots.unref()
  }

  /** Ships what is waiting (again, once the round under way ends). */
  kick (): void {
    if (this.#running !== undefined) {
      this.#again = true
      return
    }
    this.#running = this.#ship().finally(() => { this.#running = undefined })
  }

  /** Resolves once no round is under way, and writes the snapshot of what was shipped as signals. */
  async idle (): Promise<void> {
    while (this.#running !== undefined) await this.#running
    clearInterval(this.#snapshots)
    clearInterval(this.#bookSnapshots)
    await this.#snapshot().catch(() => {})
    await this.#snapshotBook().catch(() => {})
  }

  /**
   * Writes the rows this node shipped as signals since the last snapshot to the state bucket, each as this node holds
   * it now, with every node's signals applied: a partner's calls for one screen go through any node, and two nodes
   * that both sent it each write the row as the signals left it, not each its own older value. What the engine does
   * not take waits for the next snapshot.
   */
  async #snapshot (): Promise<void> {
    const rows = [...this.#dirty]
    if (rows.length === 0) return
    this.#dirty = new Map()
    this.#store.refresh()
    const results = await Promise.allSettled(rows.map(([kvKey, [table, key]]) => this.#put(kvKey, this.#store.replicated(table)!.get(key))))
    results.forEach((r, i) => {
      const [kvKey, change] = rows[i]!
      if (r.status === 'rejected' && !this.#dirty.has(kvKey)) this.#dirty.set(kvKey, change)
    })
  }

  /**
   * Writes the book's snapshot rows due (snapshots_due) to the state bucket, each as this node holds it now; a row the
   * engine does not take, or counted again since it was read, stays due. Beside the rounds, not in them: a state bucket
   * that cannot take writes for a while (its leader elected again) must not hold up the bids, whose rounds go to the
   * book stream.
   */
  async #snapshotBook (): Promise<void> {
    if (this.#snapshottingBook) return
    this.#snapshottingBook = true
    try {
      const due = [...this.#store.snapshotsDue.getKeys()]
      if (due.length === 0) return
      this.#store.refresh()
      const values = due.map((kvKey) => this.#current(kvKey))
      const written = (await Promise.allSettled(due.map((kvKey, i) => this.#putOwn(kvKey, values[i])))).flatMap((r, i) => r.status === 'fulfilled' ? [i] : [])
      if (written.length > 0) this.#store.write(() => { for (const i of written) if (isDeepStrictEqual(this.#current(due[i]!), values[i])) this.#store.snapshotsDue.removeSync(due[i]!) })
    } finally {
      this.#snapshottingBook = false
    }
  }

  /**
   * One of this node's own snapshot rows to the state bucket, after the write of it on its way: only this node writes
   * it, so the bucket ends on the value written last.
   */
  #putOwn (kvKey: string, value: unknown): Promise<unknown> {
    const before = this.#writing.get(kvKey)
    const put = (before === undefined ? this.#put(kvKey, value) : before.catch(() => {}).then(() => this.#put(kvKey, value))).then(() => {
      this.#written.delete(kvKey)
      this.#written.set(kvKey, value)
      if (this.#written.size > WRITTEN_KEPT) this.#written.delete(this.#written.keys().next().value!)
    })
    this.#writing.set(kvKey, put)
    const done = (): void => { if (this.#writing.get(kvKey) === put) this.#writing.delete(kvKey) }
    put.then(done, done)
    return put
  }

  /** This node's value now of a row of the state bucket's. */
  #current (kvKey: string): unknown {
    const { table, key } = parseStateKey(kvKey)
    return this.#store.replicated(table)?.get(key)
  }

  /** One row to the state bucket: its value, or a delete marker. */
  #put (kvKey: string, value: unknown, msgID?: string): Promise<unknown> {
    const subject = `$KV.${STATE_BUCKET}.${kvKey}`
    const opts = msgID !== undefined ? { msgID } : {}
    if (value !== undefined) return this.#engine.js.publish(subject, packValue(value), opts)
    const h = headers()
    h.set('KV-Operation', 'DEL')
    return this.#engine.js.publish(subject, undefined, { ...opts, headers: h })
  }

  /**
   * The round's commands to the names' log: a transaction under a lock alone, and runs of the others' rows merged, each
   * within COMMIT_BYTES; a transaction larger than that (a job giving back a thousand lapsed holds) goes as several
   * commands, each decided against its lock alike.
   */
  #commitsOf (logged: Logged[]): Commit[] {
    const commits: Commit[] = []
    for (let i = 0; i < logged.length;) {
      const { seq, fence } = logged[i]!
      // A run proposed before (its verdict unknown: a round that failed, or a restart) is proposed again as it was.
      const through = this.#store.commitProposals.get(seq)?.through ?? Infinity
      let end = i + 1
      let bytes = bytesOf(logged[i]!.changes)
      if (fence === undefined) {
        while (end < logged.length && logged[end]!.fence === undefined && logged[end]!.seq <= through && bytes + bytesOf(logged[end]!.changes) <= COMMIT_BYTES) bytes += bytesOf(logged[end++]!.changes)
      }
      const run = logged.slice(i, end)
      const seqs = run.map((l) => l.seq)
      const changes = run.flatMap((l) => l.changes)
      const before = fence === undefined ? undefined : logged[i]!.before
      for (const [from, to] of partsOf(changes, before)) {
        const part = changes.slice(from, to)
        const partBefore = before?.slice(from, to)
        commits.push({ seq, seqs, offset: from, changes: part, before: partBefore, ...commitCommand(this.#incarnation, seq, part, fence, partBefore) })
      }
      i = end
    }
    return commits
  }

  /**
   * Proposes a round's commits one after another, in commit order: two that write one row land in the order they were
   * written. Throws at the first whose verdict is not known in time; those known are kept for the round's next try.
   * Every try of a commit carries the time of its first (kept in LMDB): one retried past the log's time to live, by a
   * node paused or cut off, is refused as late rather than taken for new once the log no longer keeps its key.
   */
  async #proposeInOrder (commits: Commit[]): Promise<void> {
    for (const { seq, seqs, key, body } of commits) {
      if (this.#decided.has(key)) continue
      let first = this.#store.commitProposals.get(seq)
      if (first === undefined) {
        const now = this.#logNow()
        if (now === undefined) throw new Error('the names\' log is not followed yet')
        const proposal = first = { at: now, through: seqs[seqs.length - 1]! }
        this.#store.write(() => this.#store.commitProposals.putSync(seq, proposal))
      }
      const verdict = await this.#commit(key, body, first.at)
      if (verdict === undefined) throw new Error('the names\' log did not decide a transaction written under a lock in time')
      this.#decided.set(key, { seq, verdict })
    }
    // The other rows of an accepted command (a screen under its partner's lock, a seat's first key, a request's stored
    // outcome) are the state bucket's: every node applied them with it, and a node joining reads them there.
    await Promise.all(commits.flatMap(({ seq, offset, key: commit, changes }) => this.#decided.get(commit)?.verdict.status !== 'accepted'
      ? []
      : changes.flatMap(([table, key, value], n) => RECORD_TABLES.has(table) ? [] : [this.#put(stateKey(table, key), value, `${this.#incarnation}.${seq}.${offset + n}`)])))
  }

  async #ship (): Promise<void> {
    /** When the round before this one was sent, when this one lingers after it. */
    let lingerFrom: number | undefined
    do {
      // A busy node: a round of LINGER_ROWS rows or more, and changes committed while it was on its way. The next
      // round waits out the linger from the last one's start, gathering more commits into its message: what the
      // engine, this supervisor and the partition's owner spend on a round is paid per message. At c=50 a round
      // carried some 20 bids; the cluster's bid cost 200 us of CPU with rounds back to back, 155-163 with 5 ms of
      // linger, at 7,900-8,300 bids/s against 7,400 and a p99 of 12-13 ms against 14-15 (Kafka's producer has
      // lingered 5 ms by default since 4.0 for the same reason). Fewer clients make smaller rounds, which do not
      // linger: with 8, lingering halved the bids a second, each client waiting out the linger on every bid.
      if (lingerFrom !== undefined) {
        const left = lingerFrom + this.#lingerMs - performance.now()
        if (left > 0) await new Promise((resolve) => setTimeout(resolve, left))
      }
      const sent = performance.now()
      lingerFrom = undefined
      this.#again = false
      this.#store.refresh()
      const batch = oneWayEach(this.#changes.pending(BATCH))
      if (batch.length === 0) return
      const signals = new Map<string, Change>()
      const bids = new Map<string, [Change, number]>()
      /** The round's changes to the book's snapshot rows: written with it (TableSpec.withRound), or left due. */
      const withRound = new Map<string, unknown>()
      const due = new Set<string>()
      let commits: Commit[] = []
      const logged: Logged[] = []
      try {
        await this.#beforeShip(batch)
        const puts: Array<Promise<unknown>> = []
        for (const entry of batch) {
          const { seq, changes } = entry
          const named = toNames(entry)
          const toLog: Change[] = []
          const before: unknown[] = []
          changes.forEach((change, n) => {
            const kvKey = stateKey(change[0], change[1])
            // A row's last value of the round: rows of different keys apply in any order to the same result.
            if (EVENTUAL_TABLES.has(change[0])) signals.set(kvKey, change)
            else if (SNAPSHOT_TABLES.has(change[0])) {
              if (withRound.has(kvKey)) return
              if (WITH_ROUND.get(change[0])?.(this.#written.get(kvKey), change[2]) !== true) due.add(kvKey)
              else {
                due.delete(kvKey)
                withRound.set(kvKey, this.#current(kvKey))
              }
            } else if (BOOK_TABLES.has(change[0])) bids.set(kvKey, [change, seq])
            else if (named) {
              toLog.push(change)
              before.push(entry.before?.[n])
            } else puts.push(this.#put(kvKey, change[2], `${this.#incarnation}.${seq}.${n}`))
          })
          if (toLog.length > 0) logged.push({ seq, changes: toLog, fence: entry.fence, before: entry.fence === undefined ? undefined : before })
        }
        const round = `${this.#incarnation}.${batch[0]!.seq}-${batch[batch.length - 1]!.seq}`
        for (const [kvKey, value] of withRound) puts.push(this.#putOwn(kvKey, value))
        packedParts([...signals.values()]).forEach((part, n) => puts.push(this.#engine.js.publish(this.#signals, part, { msgID: `${round}.${n}` })))
        bookMessages([...bids.values()].map(([change]) => change), this.#partitions).forEach(({ partition, data }, n) => puts.push(this.#engine.js.publish(bookSubject(partition, this.#node), data, { msgID: `${round}.${partition}.${n}` })))
        commits = this.#commitsOf(logged)
        if (commits.length > 0) puts.push(this.#proposeInOrder(commits))
        await Promise.all(puts)
      } catch (err) {
        // The changes stay recorded; the next kick (the supervisor's timer at the latest) ships them again.
        if (!this.#failing) this.#log.warn('cluster: the engine did not acknowledge changes; they wait in LMDB', { error: err instanceof Error ? err.message : String(err), waiting_transactions: batch.length })
        this.#failing = true
        return
      }
      if (this.#failing) this.#log.info('cluster: the engine acknowledges changes again')
      this.#failing = false
      for (const [kvKey, change] of signals) this.#dirty.set(kvKey, change)
      const through = batch[batch.length - 1]!.seq
      this.#store.write(() => {
        this.#changes.shipped(through)
        for (const { seq, seqs, key, changes, before } of commits) {
          const verdict = this.#decided.get(key)?.verdict
          // Refused: the rows it wrote here are put back, and a request waiting on one of its transactions reads why.
          if (verdict?.status === 'refused') {
            this.#fenced.putBack(changes, before)
            for (const s of seqs) this.#store.fencedRefusals.putSync(s, verdict.reason ?? 'refused')
          }
          this.#store.commitProposals.removeSync(seq)
        }
        for (const [key, { seq }] of this.#decided) if (seq <= through) this.#decided.delete(key)
        for (const seq of this.#store.fencedRefusals.getKeys({ end: through - REFUSALS_KEPT })) this.#store.fencedRefusals.removeSync(seq)
        // A seat's counters not written with the round go with the next snapshot, whatever befalls this node before
        // it: a mark kept only in memory was lost with a node killed before it, and the others then under-counted.
        for (const kvKey of due) this.#store.snapshotsDue.putSync(kvKey, 1)
      })
      this.#onShipped(through, [...bids.values()])
      if (batch.length === BATCH) this.#again = true
      else if (batch.reduce((rows, { changes }) => rows + changes.length, 0) >= LINGER_ROWS) lingerFrom = sent
    } while (this.#again)
  }
}
