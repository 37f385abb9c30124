import type { Logger } from '../log.js'
import type { Change, Recorded } from '../store/changes.js'
import type { Store } from '../store/store.js'
import { BOOK_TABLES, EVENTUAL_TABLES, RECORD_TABLES } from '../store/tables.js'
import { commitCommand, type CommitCommand, type CopiedCommand, type FencedCommits } from './fenced-commits.js'
import type { Verdict } from './records.js'
import { packValue, stateKey } from './state-keys.js'
import { RowVersions } from './row-versions.js'

// The part of a shipping round (shipper.ts) that goes to the names' log: the records' rows (RECORD_TABLES), and the
// transactions written under a record's lock, decided there against the lock (fenced-commits.ts).

/**
 * How a transaction's change to a row every request reads travels: a record's through the names' log; another row of a
 * transaction under a lock through the log too, and then, stamped, to the state bucket once the log has accepted the
 * transaction (refused, it is put back here); any other to the state bucket at once.
 */
type Way = 'log' | 'after' | 'now'

export function wayOf (entry: Recorded, table: string): Way {
  if (RECORD_TABLES.has(table)) return 'log'
  return entry.fence !== undefined ? 'after' : 'now'
}

/**
 * The longest start of a batch in which every row travels one way, and a row sent once the log has accepted its
 * transaction is sent once: the log and the state bucket are not ordered with each other, nor are the round's writes
 * of the state bucket, and a row's later change must land after its earlier one (the rest waits for the next round).
 * Which way each row goes depends on its transactions alone, so a round sent again is cut alike.
 */
export function oneWayEach (batch: Recorded[]): Recorded[] {
  const ways = new Map<string, { way: Way, entry: number }>()
  for (let i = 0; i < batch.length; i++) {
    const entry = batch[i]!
    for (const [table, key] of entry.changes) {
      if (EVENTUAL_TABLES.has(table) || BOOK_TABLES.has(table)) continue
      const kvKey = stateKey(table, key)
      const way = wayOf(entry, table)
      const earlier = ways.get(kvKey)
      if (earlier !== undefined && earlier.entry !== i && (earlier.way !== way || way === 'after')) return batch.slice(0, i)
      ways.set(kvKey, { way, entry: i })
    }
  }
  return batch
}

/** A transaction's rows that go the log's way: its records' (log), and, under a lock, its other rows (after). */
export interface Logged {
  seq: number
  fence: { name: string, owner: string } | undefined
  /** Each row with its index among the transaction's changes, and its value before (under a lock). */
  log: Array<{ change: Change, n: number, before: unknown }>
  after: Array<{ change: Change, n: number, before: unknown }>
  /** The events it raised under its lock (ChangeLog.hold). */
  events?: unknown[]
}

/** A row of a command, with its index among its transaction's changes, and whether it is copied to the state bucket. */
interface PartRow {
  change: Change
  n: number
  before: unknown
  copy: boolean
}

/**
 * A command to the names' log: a transaction's records and, under a lock, its other rows (all, or a part of a large
 * transaction), or a run of transactions' records merged.
 */
interface Part {
  key: string
  body: CommitCommand
  /** The first transaction's seq, whose proposal time and run it is kept under. */
  seq: number
  fenced: boolean
  rows: PartRow[]
}

/** What one round sends the log's way: per transaction (or run of them merged), its commands and held events. */
export interface Plan {
  entries: Array<{ seqs: number[], parts: Part[], events?: unknown[] }>
}

/** The most a command's rows pack to: the engine refuses a message past 1 MB, and a command carries them in base64. */
const COMMIT_BYTES = 512 * 1024

/** How long a refusal is kept for the request waiting on it to read: far past any wait (an agent's call included). */
const REFUSALS_KEPT_MS = 10 * 60_000

const bytesOf = (rows: Array<{ change: Change }>): number => rows.reduce((n, { change }) => n + packValue(change).length, 0)

/** Splits rows into parts of at most COMMIT_BYTES (with their values before), one row at least. */
function partsOf<R extends { change: Change, before: unknown }> (rows: R[]): R[][] {
  const parts: R[][] = [[]]
  let bytes = 0
  for (const row of rows) {
    const size = packValue(row.change).length + packValue(row.before ?? null).length
    if (parts[parts.length - 1]!.length > 0 && bytes + size > COMMIT_BYTES) {
      parts.push([])
      bytes = 0
    }
    parts[parts.length - 1]!.push(row)
    bytes += size
  }
  return parts
}

/**
 * Ships a round's records and locked transactions to the names' log, and settles them: refused, a transaction's rows
 * are put back here and its refusal kept for the request waiting on it; accepted, a locked transaction's other rows
 * go to the state bucket (where a node joining reads them).
 */
export class RecordShipping {
  readonly #store: Store
  readonly #fenced: FencedCommits
  readonly #incarnation: string
  readonly #commit: (key: string, body: CommitCommand | CopiedCommand, proposedAt: number) => Promise<Verdict | undefined>
  readonly #logNow: () => number | undefined
  readonly #put: (kvKey: string, value: unknown, msgID: string) => Promise<unknown>
  readonly #log: Logger
  /**
   * Verdicts of commands, by key, with the seq they ship, and whether their rows are copied: those of a round that
   * failed are not proposed (or copied) again when it is sent again (a late refusal stands).
   */
  readonly #decided = new Map<string, { seq: number, verdict: Verdict, copied?: true }>()

  /**
   * incarnation: this data directory's name, which names its commands; commit: proposes a command to the names' log,
   * stamped proposedAt in the log's time, its verdict once applied here; logNow: the log's time as far as this node
   * can tell (undefined before it follows the log); put: a row's value to the state bucket, with its message id.
   */
  constructor (deps: { store: Store, fenced: FencedCommits, incarnation: string, commit: (key: string, body: CommitCommand | CopiedCommand, proposedAt: number) => Promise<Verdict | undefined>, logNow: () => number | undefined, put: (kvKey: string, value: unknown, msgID: string) => Promise<unknown>, log: Logger }) {
    this.#store = deps.store
    this.#fenced = deps.fenced
    this.#incarnation = deps.incarnation
    this.#commit = deps.commit
    this.#logNow = deps.logNow
    this.#put = deps.put
    this.#log = deps.log
  }

  /**
   * The round's commands: a transaction under a lock alone, runs of the others' records merged, each within
   * COMMIT_BYTES; a transaction larger than that (a job giving back a thousand lapsed holds) goes as several commands,
   * each decided against its lock alike. A run proposed before (a round that failed, a restart) is made again as it was.
   */
  plan (logged: Logged[]): Plan {
    const entries: Plan['entries'] = []
    for (let i = 0; i < logged.length;) {
      const { seq, fence } = logged[i]!
      const through = this.#store.commitProposals.get(seq)?.through ?? Infinity
      let end = i + 1
      if (fence === undefined) {
        let bytes = bytesOf(logged[i]!.log)
        while (end < logged.length && logged[end]!.fence === undefined && logged[end]!.seq <= through && bytes + bytesOf(logged[end]!.log) <= COMMIT_BYTES) bytes += bytesOf(logged[end++]!.log)
      }
      const run = logged.slice(i, end)
      // A transaction under a lock goes alone, its rows in the order it wrote them; a run has no rows to copy.
      const rows: PartRow[] = fence !== undefined
        ? [...logged[i]!.log.map((r) => ({ ...r, copy: false })), ...logged[i]!.after.map((r) => ({ ...r, copy: true }))].sort((a, b) => a.n - b.n)
        : run.flatMap((l) => l.log.map((r) => ({ ...r, copy: false })))
      const parts = rows.length === 0 ? [] : partsOf(rows).map((part) => ({ seq, fenced: fence !== undefined, rows: part, ...commitCommand(this.#incarnation, seq, part.map((r) => r.change), fence, fence === undefined ? undefined : part.map((r) => r.before)) }))
      entries.push({ seqs: run.map((l) => l.seq), parts, ...(fence !== undefined && logged[i]!.events !== undefined ? { events: logged[i]!.events } : {}) })
      i = end
    }
    return { entries }
  }

  /**
   * Proposes the round's commands one after another, in commit order (two that write one row land in the order they
   * were written), then copies each accepted command's rows other than records to the state bucket, stamped with the
   * command's place in the log, and tells the log so. Throws at the first command whose verdict is not known in time;
   * those known are kept for the round's next try.
   *
   * A locked transaction's every try carries the time of its first (kept in LMDB): one sent again past the log's time to
   * live, by a node paused or cut off, is refused as late rather than taken for new once the log no longer keeps its
   * key. One under no lock is stamped anew: it takes effect whenever it lands, as a state bucket row does, and a late
   * refusal of it (a publish held up past the time to live) is sent again.
   */
  async ship (plan: Plan): Promise<void> {
    for (const entry of plan.entries) {
      for (const { key, body, seq, fenced } of entry.parts) {
        if (this.#decided.has(key)) continue
        const accepted = this.#store.ownCommits.get(key)
        const verdict = accepted !== undefined ? { status: 'accepted' as const, result: { seq: accepted } } : await this.#commit(key, body, this.#proposedAt(seq, entry.seqs, fenced))
        if (verdict === undefined || (!fenced && verdict.status !== 'accepted')) throw new Error('the names\' log did not decide a command in time')
        this.#decided.set(key, { seq, verdict })
      }
    }
    await Promise.all(plan.entries.flatMap((entry) => entry.parts.map(async (part) => await this.#copy(part))))
  }

  /**
   * An accepted command's rows other than records go to the state bucket, then the log hears they are there. A part
   * of a transaction the log refused in part is copied too: it took effect.
   */
  async #copy (part: Part): Promise<void> {
    const decided = this.#decided.get(part.key)!
    if (decided.copied === true || decided.verdict.status !== 'accepted' || part.body.name === undefined || !part.rows.some((r) => r.copy)) return
    await this.copyPending(part.body.name, (decided.verdict.result as { seq: number }).seq)
    decided.copied = true
  }

  /**
   * Copies the rows the log keeps for a lock's accepted commits (at seq only, when given) to the state bucket, each
   * stamped with its commit's place in the log, and then tells the log, which lets go of them. Its writer does it for
   * its own commit; the lock's next holder for any its writer has not (paused, or gone) before it reads: both send the
   * same copies, under the same message ids, and the later is older than anything written since (row-versions.ts).
   * None kept here: copied already (or this node read on from a checkpoint taken since). Resolves once the copies are
   * in the bucket: telling the log only frees its keeping, so no answer or lock waits for it, and one that does not
   * land leaves the rows for the next holder to copy again.
   */
  async copyPending (name: string, seq?: number): Promise<void> {
    this.#store.refresh()
    for (const [at, rows] of this.#fenced.pending(name, seq)) {
      await Promise.all(rows.map(([kvKey, row]) => this.#put(kvKey, RowVersions.copy(at, row), `copy.${at}.${kvKey}`)))
      const now = this.#logNow()
      const told = now === undefined ? Promise.resolve(undefined) : this.#commit(`copied:${at}`, { op: 'copied', name, seq: at }, now)
      told.then((verdict) => { if (verdict === undefined) this.#log.warn('cluster: the names\' log did not hear of a copy; the lock\'s next holder copies it again', { name, seq: at }) }, () => {})
    }
  }

  /** When a command was first proposed, in the log's time (a locked transaction's), kept with the run it carries. */
  #proposedAt (seq: number, seqs: number[], fenced: boolean): number {
    const now = this.#logNow()
    if (now === undefined) throw new Error('the names\' log is not followed yet')
    const first = this.#store.commitProposals.get(seq)
    if (first !== undefined) return fenced ? first.at : now
    this.#store.write(() => this.#store.commitProposals.putSync(seq, { at: now, through: seqs[seqs.length - 1]! }))
    return now
  }

  /**
   * The round has shipped through seq `through` (inside its write): a refused transaction's rows are put back, but for
   * rows a later transaction of this node changed (it ships their value), and its refusal is kept for the request
   * waiting on it; what was kept for the round goes. Answers the events the accepted transactions raised, to deliver:
   * a transaction refused even in part (one over 512 KB) raised none, as far as subscribers hear.
   */
  settled (plan: Plan, through: number): unknown[] {
    let later: Map<string, number> | undefined
    const now = Date.now()
    const events: unknown[] = []
    for (const entry of plan.entries) {
      const refused = entry.parts.filter((p) => this.#decided.get(p.key)?.verdict.status === 'refused')
      if (refused.length === 0) events.push(...entry.events ?? [])
      else {
        later ??= this.#pendingAfter(through)
        const changed = later
        const putBack = (rows: Array<{ change: Change, before: unknown }>): void => {
          const kept = rows.filter(({ change }) => !changed.has(stateKey(change[0], change[1])))
          this.#fenced.putBack(kept.map((r) => r.change), kept.map((r) => r.before))
        }
        for (const part of refused) putBack(part.rows)
        const why = this.#decided.get(refused[0]!.key)!.verdict.reason ?? 'refused'
        for (const seq of entry.seqs) this.#store.fencedRefusals.putSync(seq, { reason: why, partly: refused.length < entry.parts.length, at: now })
      }
      for (const part of entry.parts) this.#store.ownCommits.removeSync(part.key)
      this.#store.commitProposals.removeSync(entry.seqs[0]!)
    }
    for (const [key, { seq }] of this.#decided) if (seq <= through) this.#decided.delete(key)
    for (const { key, value } of this.#store.fencedRefusals.getRange()) {
      if (value.at > now - REFUSALS_KEPT_MS) break
      this.#store.fencedRefusals.removeSync(key)
    }
    return events
  }

  /** The rows of this node's transactions still waiting after seq `through`, each with the seq of its latest change. */
  #pendingAfter (through: number): Map<string, number> {
    const changes = this.#store.changes
    const pending = changes === undefined ? new Map<string, number>() : changes.pendingKeys(stateKey)
    for (const [kvKey, seq] of pending) if (seq <= through) pending.delete(kvKey)
    return pending
  }
}
