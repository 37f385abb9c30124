import type { Database, Key } from 'lmdb'
import { pack, unpack } from 'msgpackr'
import type { JetStreamManager, ObjectInfo, ObjectStore as EngineObjects, ObjectStoreStatus } from 'nats'
import type { Store } from '../store/store.js'
import { within } from '../retry.js'
import type { EntryVerdict, PartitionMark } from './records.js'

// A log's checkpoints (issue 47: logs were never trimmed, and a node joining a cluster that had run for a week would
// apply every entry since its start, most of them owners' beats). The log's owner stores the rows the log decides, as
// of one of its entries, in the engine's object store; the log is then trimmed below an older checkpoint. A node that
// cannot read the log on from its mark (it joined late, or was away past a trim) starts from the newest checkpoint.

/**
 * The rows of a table that one log's entries decide, and nothing else writes: what a checkpoint of the log holds. A
 * whole table (the names' claims), or the slice of one that a log's keys fall in (a partition's screens' bookings).
 * Named, so that a checkpoint restores each table's rows into that table whatever order a later version lists them in.
 */
export interface LogTable {
  name: string
  rows (): Iterable<{ key: Key, value: unknown }>
  putSync (key: Key, value: unknown): void
  removeSync (key: Key): void
}

type Table<K extends Key> = Pick<Database<unknown, K>, 'getRange' | 'putSync' | 'removeSync'>

const slice = <K extends Key>(name: string, table: Table<K>, rows: () => Iterable<{ key: Key, value: unknown }>): LogTable => ({
  name,
  rows,
  putSync: (key, value) => table.putSync(key as K, value),
  removeSync: (key) => table.removeSync(key as K)
})

/** Every row of a table is the log's. */
export function wholeTable<K extends Key> (name: string, table: Table<K>): LogTable {
  return tableSlice(name, table, () => true)
}

/** The rows of a table whose keys belong to the log, found by reading the whole table. */
export function tableSlice<K extends Key> (name: string, table: Table<K>, belongs: (key: K) => boolean): LogTable {
  return slice(name, table, function * () {
    for (const row of table.getRange()) if (belongs(row.key)) yield row
  })
}

/**
 * The rows of a table whose keys start with the log's own name for them (a partition's number, or 'claims'): read as
 * one range of the table, so that a log's checkpoint reads its own rows, not every log's.
 */
export function prefixSlice<K extends Key> (name: string, table: Table<K>, prefix: number | string): LogTable {
  return slice(name, table, () => table.getRange({ start: [prefix], end: [prefix, '\uffff'] } as never))
}

/** The checkpoints' format: a node restores only one it can read. */
const FORMAT = 1

/**
 * Records of earlier removals a put forgets at most, beside its own: a cluster upgraded from a version that kept them
 * has one a checkpoint it ever stored, and forgets them a few at each checkpoint rather than all at once.
 */
const FORGOTTEN_A_PUT = 50

/** A log's rows as of one of its entries. */
export interface Checkpoint {
  format: number
  /** The log's mark at that entry: its stream, sequence, log time, epoch and owner. */
  mark: PartitionMark
  /** The verdicts still kept then, by sequence: with keys, what keeps a duplicate command from running twice. */
  verdicts: Array<[number, EntryVerdict]>
  keys: Array<[string, number]>
  /** Each of the machine's tables' rows, by the table's name. */
  tables: Record<string, Array<[Key, unknown]>>
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
  return { format: FORMAT, mark, verdicts, keys, tables: Object.fromEntries(tables.map((t) => [t.name, [...t.rows()].map(({ key, value }) => [key, value])])) }
}

/**
 * Replaces this node's rows of a log with a checkpoint's: the machine's tables, the log's verdicts and keys, and its
 * mark. Runs inside a write transaction, so the node's rows are the old ones or the checkpoint's, never a mix.
 */
export function restoreCheckpoint (store: Store, log: string, checkpoint: Checkpoint, tables: LogTable[]): void {
  for (const table of tables) {
    for (const { key } of [...table.rows()]) table.removeSync(key)
    for (const [key, value] of checkpoint.tables[table.name] ?? []) table.putSync(key, value)
  }
  for (const key of [...store.partitionVerdicts.getKeys({ start: [log, 0], end: [log, Infinity] } as never)]) store.partitionVerdicts.removeSync(key as [string, number])
  for (const key of [...store.partitionKeys.getKeys({ start: [log, ''], end: [log, '\uffff'] } as never)]) store.partitionKeys.removeSync(key as [string, string])
  for (const [seq, verdict] of checkpoint.verdicts) store.partitionVerdicts.putSync([log, seq], verdict)
  for (const [key, seq] of checkpoint.keys) store.partitionKeys.putSync([log, key], seq)
  store.partitionMarks.putSync(log, checkpoint.mark)
}

/**
 * The logs' checkpoints in the engine's object store, each named for its log, the stream it was read from (a stream
 * created again is a new log) and its entry (`<log>.<stream>.<seq>`, the stream by its name or creation time), and
 * never overwritten. Any node's rows of a
 * log at an entry are every holder's (the log decides them), so a checkpoint is good whoever wrote it; but a deposed
 * owner that wakes from a pause may store an older one after a newer: with names that never repeat, it adds a
 * checkpoint and replaces none, and the log is never trimmed past the newest.
 */
export class Checkpoints {
  readonly #bucket: EngineObjects
  readonly #jsm: JetStreamManager
  readonly #timeoutMs: number
  #status: ObjectStoreStatus | undefined

  constructor (bucket: EngineObjects, jsm: JetStreamManager, timeoutMs: number) {
    this.#bucket = bucket
    this.#jsm = jsm
    this.#timeoutMs = timeoutMs
  }

  /**
   * Stores a log's checkpoint beside the ones before, and removes all but the last two: answers the entry of the
   * newest stored checkpoint at least `behind` entries older than it (0: none), below which the log may be trimmed, so
   * that a node that far behind the head still reads on.
   */
  async put (log: string, checkpoint: Checkpoint, behind: number): Promise<number> {
    const { stream_created: created, applied } = checkpoint.mark
    const name = `${this.#prefix(log, created)}${applied}`
    try {
      await within(this.#timeoutMs, `storing ${name}`, this.#bucket.putBlob({ name }, pack(checkpoint)))
    } catch (err) {
      // A put that failed may have left the object listed without its data: it must not be the one a node reads.
      await this.#remove(name).catch(() => {})
      throw err
    }
    const { kept, removed } = await this.#entries(log, created)
    for (const seq of kept.slice(2)) await this.#remove(`${this.#prefix(log, created)}${seq}`)
    // Records of removals that were not forgotten (a timeout, or a version that did not forget them).
    for (const seq of removed.slice(0, FORGOTTEN_A_PUT)) await this.#forget(`${this.#prefix(log, created)}${seq}`)
    return kept.find((seq) => seq <= applied - behind) ?? 0
  }

  /**
   * The newest checkpoint of the log's stream created at `created` that reaches entry `from` (the stream's first: a
   * node reads on from the entry after it), or undefined. Newest first, each read within the timeout: one that cannot
   * be read (its put failed, or it was removed meanwhile) is passed over for the one before.
   */
  async get (log: string, created: string, from: number): Promise<Checkpoint | undefined> {
    for (const seq of (await this.#entries(log, created)).kept) {
      if (seq + 1 < from) return undefined
      const bytes = await within(this.#timeoutMs, `reading ${log} ${seq}`, this.#bucket.getBlob(`${this.#prefix(log, created)}${seq}`)).catch(() => null)
      if (bytes === null) continue
      const checkpoint = unpack(bytes) as Checkpoint
      if (checkpoint.format === FORMAT) return checkpoint
    }
    return undefined
  }

  /** A checkpoint's name begins with its log and stream: a creation time as milliseconds (streams named before), or the name. */
  #prefix (log: string, created: string): string {
    const at = Date.parse(created)
    return `${log}.${Number.isNaN(at) ? created : at}.`
  }

  /**
   * Removes a checkpoint, and then the record of its removal that the object store would keep for good: names are never
   * used twice, so those records piled up, one a checkpoint ever stored (a busy partition stores one every few
   * seconds), and every listing (each put, each node that starts) read them all.
   */
  async #remove (name: string): Promise<void> {
    await within(this.#timeoutMs, `removing ${name}`, this.#bucket.delete(name))
    await this.#forget(name)
  }

  /** Purges an object's record (its meta subject, as nats.js names it: the name base64url-encoded, padded). */
  async #forget (name: string): Promise<void> {
    const status = this.#status ??= await within(this.#timeoutMs, 'reading the checkpoints\' bucket', this.#bucket.status())
    const meta = `$O.${status.bucket}.M.${Buffer.from(name, 'latin1').toString('base64').replace(/\+/g, '-').replace(/\//g, '_')}`
    await within(this.#timeoutMs, `forgetting ${name}`, this.#jsm.streams.purge(status.streamInfo.config.name, { filter: meta }))
  }

  /** The entries the log's stream has checkpoints of, newest first, and those removed but still on record. */
  async #entries (log: string, created: string): Promise<{ kept: number[], removed: number[] }> {
    const prefix = this.#prefix(log, created)
    const kept: number[] = []
    const removed: number[] = []
    for (const o of await within(this.#timeoutMs, 'listing the checkpoints', this.#records())) {
      if (!o.name.startsWith(prefix) || !/^\d+$/.test(o.name.slice(prefix.length))) continue
      const seq = Number(o.name.slice(prefix.length))
      if (o.deleted) removed.push(seq)
      else kept.push(seq)
    }
    return { kept: kept.sort((a, b) => b - a), removed }
  }

  /** Every object's record, the removed ones' too (the bucket's list() leaves those out, though it reads them). */
  async #records (): Promise<ObjectInfo[]> {
    const out: ObjectInfo[] = []
    const records = await this.#bucket.watch({ includeHistory: true, ignoreDeletes: false })
    try {
      for await (const info of records) {
        // The watch gives null once it has given what the bucket held when it began.
        if (info === null) break
        out.push(info)
      }
    } finally {
      records.stop()
    }
    return out
  }
}
