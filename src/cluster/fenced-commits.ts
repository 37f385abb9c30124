import { createHash } from 'node:crypto'
import type { Change, Fence } from '../store/changes.js'
import type { Store } from '../store/store.js'
import { RECORD_TABLES } from '../store/tables.js'
import { wholeTable, type LogTable } from './checkpoints.js'
import type { FencedRow, Verdict } from './records.js'
import { writeRow, type AppliedHook } from './row-writes.js'
import { packValue, parseStateKey, stateKey, unpackValue } from './state-keys.js'

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
 * The rows the names' log decides, on this node. A row's first write under a lock makes it one: from then on every
 * change to it goes through the log (the shipper sends them there, the applier skips the state bucket's), so a write
 * under a lock is never overtaken by an older value arriving by another way, and a node joining reads the row from the
 * log's checkpoint, not from the state bucket, where a paused writer's refused put could be its last value.
 */
export class FencedCommits {
  readonly #store: Store
  readonly #onApplied: AppliedHook
  readonly #writer: string
  /** The rows, as a table of the names' log's checkpoints. */
  readonly table: LogTable

  /** writer: this data directory's incarnation, which names the commands it proposes (src/cluster/node.ts). */
  constructor (deps: { store: Store, onApplied: AppliedHook, writer: string }) {
    this.#store = deps.store
    this.#onApplied = deps.onApplied
    this.#writer = deps.writer
    this.table = wholeTable('fenced_rows', deps.store.fencedRows)
  }

  /** Whether the names' log decides a row (by its state key). */
  decides (kvKey: string): boolean {
    return this.#store.fencedRows.doesExist(kvKey)
  }

  /**
   * A commit at its place in the log, inside its apply: accepted when it is under no lock, or holder (the live claim's
   * owner of its lock there) is its owner; then its rows are written on this node, and a record's is the log's now.
   */
  apply (c: CommitCommand, holder: string | undefined): Verdict {
    if (c.name !== undefined && holder !== c.owner) return { status: 'refused', reason: 'lock_lost' }
    const [changes] = rowsOf(c)
    this.#write(() => {
      for (const [table, key, value] of changes) {
        if (RECORD_TABLES.has(table)) this.#store.fencedRows.putSync(stateKey(table, key), value === undefined ? { removed: true } : { value })
        writeRow(this.#store, this.#onApplied, table, key, value)
      }
    })
    // Its writer knows it counted, even should it ask again once the log no longer keeps its key (paused 10 minutes).
    if (c.writer === this.#writer) this.#store.ownCommits.putSync(c.id, 1)
    return ACCEPTED
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
        const decided = this.#store.fencedRows.get(stateKey(table, key))
        if (decided !== undefined) writeRow(this.#store, this.#onApplied, table, key, valueOf(decided))
        else if (before !== undefined) writeRow(this.#store, this.#onApplied, table, key, before[i])
      }
    })
  }

  /** A checkpoint replaced the rows (inside its transaction): the tables take them. */
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
