import type { Database, Key } from 'lmdb'
import { pack, unpack } from 'msgpackr'
import type { ObjectStore as EngineObjects } from 'nats'
import type { Store } from '../store/store.js'
import type { EntryVerdict, PartitionMark } from './records.js'

// A log's checkpoints (issue 47: logs were never trimmed, and a node joining a cluster that had run for a week would
// apply every entry since its start, most of them owners' beats). The log's owner stores the rows the log decides, as
// of one of its entries, in the engine's object store; the log is then trimmed below the checkpoint before it. A node
// that cannot read the log on from its mark (it joined late, or was away past a trim) starts from the checkpoint.

/**
 * The rows of a table that one log's entries decide, and nothing else writes: what a checkpoint of the log holds. A
 * whole table (the names' claims), or the slice of one that a log's keys fall in (a partition's screens' bookings).
 */
export interface LogTable {
  rows (): Iterable<{ key: Key, value: unknown }>
  putSync (key: Key, value: unknown): void
  removeSync (key: Key): void
}

type Table<K extends Key> = Pick<Database<unknown, K>, 'getRange' | 'putSync' | 'removeSync'>

/** Every row of a table is the log's. */
export function wholeTable<K extends Key> (table: Table<K>): LogTable {
  return tableSlice(table, () => true)
}

/** The rows of a table whose keys belong to the log. */
export function tableSlice<K extends Key> (table: Table<K>, belongs: (key: K) => boolean): LogTable {
  return {
    * rows () {
      for (const row of table.getRange()) if (belongs(row.key)) yield row
    },
    putSync: (key, value) => table.putSync(key as K, value),
    removeSync: (key) => table.removeSync(key as K)
  }
}

/** A log's rows as of one of its entries. */
export interface Checkpoint {
  /** The log's mark at that entry: its sequence, log time, epoch and owner. */
  mark: PartitionMark
  /** The verdicts still kept then, by sequence: with keys, what keeps a duplicate command from running twice. */
  verdicts: Array<[number, EntryVerdict]>
  keys: Array<[string, number]>
  /** Each of the machine's tables' rows, in the order the machine lists its tables. */
  tables: Array<Array<[Key, unknown]>>
}

/**
 * Reads a log's checkpoint from this node's rows, as its last commit left them: called right after the apply that
 * reached mark, so no entry after it is in them.
 */
export function readCheckpoint (store: Store, log: string, mark: PartitionMark, tables: LogTable[], keptSince: number): Checkpoint {
  const verdicts: Array<[number, EntryVerdict]> = []
  const keys: Array<[string, number]> = []
  for (const { key, value } of store.partitionVerdicts.getRange({ start: [log, 0], end: [log, Infinity] } as never)) {
    if ((value.at ?? 0) <= keptSince) continue
    const seq = (key as [string, number])[1]
    verdicts.push([seq, value])
    if (store.partitionKeys.get([log, value.key]) === seq) keys.push([value.key, seq])
  }
  return { mark, verdicts, keys, tables: tables.map((t) => [...t.rows()].map(({ key, value }) => [key, value])) }
}

/**
 * Replaces this node's rows of a log with a checkpoint's: the machine's tables, the log's verdicts and keys, and its
 * mark. Runs inside a write transaction, so the node's rows are the old ones or the checkpoint's, never a mix.
 */
export function restoreCheckpoint (store: Store, log: string, checkpoint: Checkpoint, tables: LogTable[]): void {
  tables.forEach((table, i) => {
    for (const { key } of [...table.rows()]) table.removeSync(key)
    for (const [key, value] of checkpoint.tables[i] ?? []) table.putSync(key, value)
  })
  for (const key of [...store.partitionVerdicts.getKeys({ start: [log, 0], end: [log, Infinity] } as never)]) store.partitionVerdicts.removeSync(key as [string, number])
  for (const key of [...store.partitionKeys.getKeys({ start: [log, ''], end: [log, '\uffff'] } as never)]) store.partitionKeys.removeSync(key as [string, string])
  for (const [seq, verdict] of checkpoint.verdicts) store.partitionVerdicts.putSync([log, seq], verdict)
  for (const [key, seq] of checkpoint.keys) store.partitionKeys.putSync([log, key], seq)
  store.partitionMarks.putSync(log, checkpoint.mark)
}

/**
 * The logs' checkpoints in the engine's object store, each named for its log and entry (`<log>.<seq>`) and never
 * overwritten. Any node's rows of a log at an entry are every holder's (the log decides them), so a checkpoint is good
 * whoever wrote it; but a deposed owner that wakes from a pause may store an older one after a newer: with names that
 * never repeat, it adds a checkpoint and replaces none, and the log is never trimmed past the newest.
 */
export class Checkpoints {
  readonly #bucket: EngineObjects

  constructor (bucket: EngineObjects) {
    this.#bucket = bucket
  }

  /**
   * Stores a log's checkpoint beside the ones before, and removes all but the last two: answers the entry of the one
   * before it (0: there was none), below which the log may be trimmed.
   */
  async put (log: string, checkpoint: Checkpoint): Promise<number> {
    await this.#bucket.putBlob({ name: `${log}.${checkpoint.mark.applied}` }, pack(checkpoint))
    const kept = await this.#entries(log)
    for (const seq of kept.slice(2)) await this.#bucket.delete(`${log}.${seq}`)
    return kept.find((seq) => seq < checkpoint.mark.applied) ?? 0
  }

  /** A log's newest checkpoint, or undefined when it has none. */
  async get (log: string): Promise<Checkpoint | undefined> {
    const [newest] = await this.#entries(log)
    const bytes = newest === undefined ? null : await this.#bucket.getBlob(`${log}.${newest}`)
    return bytes === null ? undefined : unpack(bytes) as Checkpoint
  }

  /** The entries a log has checkpoints of, newest first. */
  async #entries (log: string): Promise<number[]> {
    const prefix = `${log}.`
    return (await this.#bucket.list())
      .filter((o) => !o.deleted && o.name.startsWith(prefix) && /^\d+$/.test(o.name.slice(prefix.length)))
      .map((o) => Number(o.name.slice(prefix.length)))
      .sort((a, b) => b - a)
  }
}
