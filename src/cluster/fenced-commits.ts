import { createHash } from 'node:crypto'
import type { Change, Fence } from '../store/changes.js'
import type { Store } from '../store/store.js'
import { RECORD_TABLES } from '../store/tables.js'
import { wholeTable, type LogTable } from './checkpoints.js'
import type { FencedRow, Verdict } from './records.js'
import { writeRow, type AppliedHook } from './row-writes.js'
import { packValue, parseStateKey, stateKey, unpackValue } from './state-keys.js'
import { RowVersions } from './row-versions.js'

// Writes under a record's lock, fenced where they take effect (issue 47). A record's lock is a claim in the names' log
// (record-locks.ts), taken over once its holder has held it 30 s of log time: a holder paused past that (a long GC, a
// VM migration, SIGSTOP) wakes still holding what it decided before the pause. Its write was a plain put in the state
// bucket then, and landed over the next holder's. Now a transaction written under a lock is a command in the same
// log as the lock itself, and takes effect on every node only if, at its place in the log's total order, the lock's
// claim is still its writer's. A write landing after another request's claim is refused everywhere, however late it
// lands; one landing before it is applied on the next holder before that holder's claim is answered, so the next
// holder reads it. The log's order is the only thing relied on: no TTL, clock or follower read decides.

/** A transaction's rows as a names' log command: under a record's lock (name, owner), or not (a fenced row's later write). */
export interface CommitCommand {
  op: 'commit'
  /** Its key: the node that wrote it keeps the keys of its commands the log accepted, until they have shipped. */
  id: string
  name?: string
  owner?: string
  /** The data directory (its incarnation) whose node wrote it. */
  writer: string
  /** [changes, the rows' values before them], MessagePack in base64: a log entry is JSON, and a row may hold bytes. */
  rows: string
}

/**
 * The rows (not records) that a lock's transaction the log accepted at seq wrote are in the state bucket: copied by
 * their writer, or by the lock's next holder. The log need keep them no longer.
 */
export interface CopiedCommand {
  op: 'copied'
  name: string
  seq: number
}

const ACCEPTED: Verdict = { status: 'accepted' }

/**
 * The command that ships a node's transaction seq, and its key: the same when the shipper proposes it again. The key
 * names the rows too: a data directory restored from a backup records other transactions under seqs it used before,
 * which must not be taken for those.
 */
export function commitCommand (writer: string, seq: number, changes: Change[], fence?: { name: string, owner: string }, before?: unknown[]): { key: string, body: CommitCommand } {
  const rows = packValue([changes, before ?? []]).toString('base64')
  const key = `commit:${writer}.${seq}.${createHash('sha256').update(rows).digest('base64url').slice(0, 16)}`
  return { key, body: { op: 'commit', id: key, ...fence, writer, rows } }
}

const rowsOf = (c: CommitCommand): [Change[], unknown[]] => unpackValue(Buffer.from(c.rows, 'base64')) as [Change[], unknown[]]

const valueOf = (row: FencedRow): unknown => 'value' in row ? row.value : undefined

/** The range of pending_copies a lock's commits are kept in (at seq only, when given). */
const keptRange = (name: string, seq?: number): never => (seq === undefined ? { start: [name], end: [name, Infinity] } : { start: [name, seq], end: [name, seq, '\uffff'] }) as never

/**
 * What the names' log decided of a fence's transactions through seq, as the shipper recorded it (fenced_refusals):
 * all refused, only some (an agent's call whose later writes came after its lock passed on), or undefined when none
 * was. The request or job that wrote them reads it once they have shipped.
 */
export function refusalOf (store: Store, fence: Fence, through = Infinity): 'all' | 'some' | undefined {
  const refusals = fence.seqs.filter((s) => s <= through).map((s) => store.fencedRefusals.get(s))
  if (refusals.every((r) => r === undefined)) return undefined
  return refusals.every((r) => r !== undefined && !r.partly) ? 'all' : 'some'
}

/**
 * The rows the names' log decides, on this node. A record (RECORD_TABLES) changes only through the log: its value is
 * the log's for good (the applier skips the state bucket's), and a node joining reads it from the log's checkpoint,
 * not from the state bucket, where a paused writer's refused put could be its last value.
 *
 * A transaction under a lock writes other rows too (a screen under its partner's lock, the Idempotency-Key's
 * outcome). They are in its command as well, and the log keeps them (pending_copies, in its checkpoints) until they
 * are in the state bucket, where every node reads them: its writer copies them there once the log has accepted it,
 * and says so in the log. A writer paused between the verdict and its copy has not: the lock's next holder, whose
 * claim comes later in the log, finds them kept, copies them itself and reads them before its handler runs. Copies
 * carry their place in the log, so the paused writer's, landing at last, is older than what the next holder wrote
 * since, on every node (row-versions.ts).
 */
export class FencedCommits {
  readonly #store: Store
  readonly #onApplied: AppliedHook
  readonly #writer: string
  readonly #versions: RowVersions
  /** The rows, as tables of the names' log's checkpoints. */
  readonly tables: LogTable[]

  /** writer: this data directory's incarnation, which names the commands it proposes (src/cluster/node.ts). */
  constructor (deps: { store: Store, onApplied: AppliedHook, writer: string }) {
    this.#store = deps.store
    this.#onApplied = deps.onApplied
    this.#writer = deps.writer
    this.#versions = new RowVersions(deps.store)
    this.tables = [wholeTable('fenced_rows', deps.store.fencedRows), wholeTable('pending_copies', deps.store.pendingCopies)]
  }

  /** Whether the names' log decides a row (by its state key). */
  decides (kvKey: string): boolean {
    return this.#store.fencedRows.doesExist(kvKey)
  }

  /**
   * A commit at its place in the log (seq), inside its apply: accepted when it is under no lock, or holder (the live
   * claim's owner of its lock there) is its owner; then its records are written on this node, and are the log's now,
   * and its other rows are kept until they are copied.
   */
  apply (c: CommitCommand, holder: string | undefined, seq: number): Verdict {
    if (c.name !== undefined && holder !== c.owner) return { status: 'refused', reason: 'lock_lost' }
    const [changes] = rowsOf(c)
    this.#write(() => {
      for (const [table, key, value] of changes) {
        const row: FencedRow = value === undefined ? { removed: true } : { value }
        if (!RECORD_TABLES.has(table)) this.#store.pendingCopies.putSync([c.name ?? '', seq, stateKey(table, key)], row)
        else {
          this.#store.fencedRows.putSync(stateKey(table, key), row)
          writeRow(this.#store, this.#onApplied, table, key, value)
        }
      }
    })
    // Its writer knows it counted, and where, even should it ask again once the log no longer keeps its key.
    if (c.writer === this.#writer) this.#store.ownCommits.putSync(c.id, seq)
    return { status: 'accepted', result: { seq } }
  }

  /** The rows a lock's commit at seq wrote are in the state bucket: the log lets go of them. */
  copied (c: CopiedCommand): Verdict {
    for (const key of [...this.#store.pendingCopies.getKeys(keptRange(c.name, c.seq))]) this.#store.pendingCopies.removeSync(key as [string, number, string])
    return ACCEPTED
  }

  /** The rows of a lock's commits still to be copied (at seq only, when given), by seq, as the log decided them. */
  pending (name: string, seq?: number): Map<number, Array<[string, FencedRow]>> {
    const out = new Map<number, Array<[string, FencedRow]>>()
    for (const { key, value } of this.#store.pendingCopies.getRange(keptRange(name, seq))) {
      const [, at, kvKey] = key as [string, number, string]
      const rows = out.get(at) ?? []
      if (rows.length === 0) out.set(at, rows)
      rows.push([kvKey, value])
    }
    return out
  }

  /**
   * This node's transaction was refused (by its lock, or by the log: it landed too late), inside a transaction: its
   * rows are put back, each to what the log decided of it, else to its value before the write (before: one a row,
   * for a transaction under a lock; without, a row the log never decided keeps this node's value). Last change first,
   * so a row the transaction wrote twice ends on its value from before the transaction. The shipper does it once it
   * knows the verdict, once: a node that skipped the entry (it read on from a checkpoint) learns it as its proposer.
   */
  putBack (changes: Change[], before: unknown[] | undefined): void {
    this.#write(() => {
      for (let i = changes.length - 1; i >= 0; i--) {
        const [table, key] = changes[i]!
        const kvKey = stateKey(table, key)
        const decided = RECORD_TABLES.has(table) ? this.#store.fencedRows.get(kvKey) : this.#versions.held(kvKey)
        if (decided !== undefined) writeRow(this.#store, this.#onApplied, table, key, 'removed' in decided ? undefined : decided.value)
        else if (before !== undefined) writeRow(this.#store, this.#onApplied, table, key, before[i])
      }
    })
  }

  /** A checkpoint replaced the rows (inside its transaction): the tables take the records. */
  restored (): void {
    this.#write(() => {
      for (const { key, value } of this.#store.fencedRows.getRange()) {
        const { table, key: rowKey } = parseStateKey(key)
        writeRow(this.#store, this.#onApplied, table, rowKey, valueOf(value))
      }
    })
  }

  /** Writes that the engine decided: not this node's changes to ship. */
  #write (fn: () => void): void {
    const changes = this.#store.changes
    if (changes === undefined) fn()
    else changes.applying(fn)
  }
}
