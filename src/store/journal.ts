import { closeSync, existsSync, fdatasyncSync, mkdirSync, openSync, readdirSync, readFileSync, unlinkSync, writeSync } from 'node:fs'
import { join } from 'node:path'
import { crc32 } from 'node:zlib'
import type { JournalTurns } from './journal-turns.js'
import type { Store } from './store.js'

/** A journal file past this many bytes is replaced by a new one once everything in it is applied. */
const ROTATE_BYTES = 64 * 1024 * 1024
/** Entries a batch applies at most: a turn with more applies them as they come, this many to a transaction. */
const MAX_BATCH = 512
/** Each frame: the payload's length and its CRC-32, then the payload (JSON). */
const HEADER = 8
const META = 'journal:'

/**
 * How an entry was made durable: committed at once, appended to the journal and applied with its turn, or (on a
 * cluster node, an entry that replicates) applied with its turn and answered once the engine holds it.
 */
export type Durable = 'at_once' | 'journaled' | 'engine'

export interface JournalOptions<E> {
  store: Store
  /** The folder of journal files (DATA_DIR/journal). */
  dir: string
  /** Whose journal: a hot thread's files are named after it, so that the thread that replaces it replays them. */
  owner: string
  /** Applies entries' writes, in order; called inside a write transaction (one per batch). */
  apply: (entries: readonly E[]) => void
  /** fsync: each append is flushed to the disk before it is acknowledged, as each commit is (DURABILITY=fsync). */
  fsync: boolean
  /** Told how each entry was made durable (/metrics). */
  counted?: (how: Durable) => void
  /**
   * Whether applying entry may write a table a cluster replicates (its answer then waits for the engine: applied());
   * true when unsure. A spot decision that settled no bid writes none, and its answer need not wait for the turn.
   */
  replicates?: (entry: E) => boolean
  /** This thread's part in what the threads share of their journals' progress (awaitOthers). */
  turns?: JournalTurns
}

/**
 * A write-ahead journal in front of LMDB, for the hot routes whose writes are many and small (a bid's record, its
 * expiry entry, the seat's hour of counters and its funnel event). A synchronous LMDB commit costs a hot request as
 * much as the rest of it (docs/architecture.md, "A bid's CPU, measured"); one `write` to this thread's journal file
 * costs a few microseconds and is exactly as durable as a commit under DURABILITY=os: in the page cache when it
 * returns, so a kill -9 loses nothing acknowledged. The entries a turn of the event loop appended are applied to LMDB
 * in one transaction at the end of that turn, which also records how far the file is applied; a start replays what
 * a file holds past that point (recoverJournals). An answer is still written only once its writes are durable, and
 * synchronously, so pipelined requests are answered in order.
 *
 * What it costs: an entry is visible to reads (this thread's later requests in the same turn, other threads) once its
 * turn ends, typically well under a millisecond after its answer. A thread whose last turn applied one entry or none
 * commits the next at once instead: with nothing to share a commit with, the journal would only add its write. A
 * reader that must see every answer given before it waits for the other threads' turns (awaitOthers).
 */
export class Journal<E> {
  readonly #options: JournalOptions<E>
  #fd: number | undefined
  #file = ''
  #size = 0
  /** How far the file is marked applied in LMDB: a batch that appended nothing to it leaves the mark as it is. */
  #marked = 0
  #pending: E[] = []
  /** Reused for every frame: one allocation, however many appends. */
  #frame = Buffer.allocUnsafe(64 * 1024)
  /** Entries recorded in the turn running, and in the last turn that recorded any. */
  #thisTurn = 0
  #lastTurn = 0
  #turnEnds = false
  /** Meta keys of files retired (unlinked) whose removal rides with the next transaction. */
  #retired: string[] = []
  /** Callers of applied(), told the change log's seq of the transaction that applies what is pending. */
  #waiting: Array<(seq: number) => void> = []
  /** Whether an entry pending may write a replicated table (JournalOptions.replicates). */
  #replicating = false

  constructor (options: JournalOptions<E>) {
    this.#options = options
  }

  /**
   * Makes entry's writes durable before the caller answers. Inside a write transaction (a request with an
   * Idempotency-Key, whose stored answer must commit with its writes; a dry run, which rolls them back) they are
   * applied in it.
   */
  record (entry: E): void {
    const { store, apply, counted } = this.#options
    if (store.inTransaction) return apply([entry])
    this.#thisTurn++
    this.#endTurnSoon()
    const replicates = this.#options.replicates?.(entry) ?? true
    // On a cluster node such an entry's answer waits for its turn's transaction and then for the engine to hold what
    // it recorded (RequestCoordination.turn): the journal's copy would keep nothing anyone was told, and a commit of
    // its own would only add one per entry to the turn's.
    const shipped = replicates && store.changes !== undefined
    if (!shipped && this.#lastTurn <= 1 && this.#pending.length === 0) {
      store.write(() => { this.#dropRetired(); apply([entry]) })
      counted?.('at_once')
      return
    }
    // A full batch is applied before another entry joins it, never by the record of the entry that filled it: every
    // entry's caller, asking applied() once record returns, finds its entry pending and waits for its commit.
    if (this.#pending.length >= MAX_BATCH) this.flush()
    if (!shipped) this.#append(entry)
    this.#pending.push(entry)
    this.#options.turns?.journaled()
    if (replicates) this.#replicating = true
    counted?.(shipped ? 'engine' : 'journaled')
  }

  /**
   * Undefined when nothing journaled that may write a replicated table waits to be applied; else resolves once it
   * is, with the seq under which the applying transaction recorded changes for a cluster's engine (0 for none a reply
   * must wait to see shipped). On a cluster node a journaled request answers only once the engine holds what it
   * wrote (src/http/request-cycle.ts).
   */
  applied (): Promise<number> | undefined {
    if (!this.#replicating) return undefined
    return new Promise((resolve) => this.#waiting.push(resolve))
  }

  /** Applies what was journaled and not yet applied; the end of each turn does it, and a graceful stop. */
  flush (): void {
    if (this.#pending.length === 0) return
    const { store, apply } = this.#options
    const batch = this.#pending
    const file = this.#file
    const size = this.#size
    this.#pending = []
    this.#replicating = false
    try {
      store.write(() => {
        this.#dropRetired()
        apply(batch)
        if (size > this.#marked) store.meta.putSync(META + file, size)
      })
    } catch (err) {
      // Kept, in order: a later batch must not mark the file applied past entries that are not. The error ends the
      // thread when the turn's end met it, and the thread that replaces it replays the file.
      this.#pending = batch.concat(this.#pending)
      this.#replicating = true
      throw err
    }
    this.#marked = size
    this.#options.turns?.applied()
    if (this.#waiting.length > 0) {
      // Taken here, in the turn's end: the next request's handler would take this commit's seq as no request's.
      const seq = store.changes?.takeCommitted() ?? 0
      const waiting = this.#waiting
      this.#waiting = []
      for (const resolve of waiting) resolve(seq)
    }
    if (this.#size >= ROTATE_BYTES) this.#retire()
  }

  /**
   * Waits until every answer any thread gave before now has its writes in LMDB (JournalTurns), or until the deadline
   * (performance.now() ms); false at the deadline. This thread's own are applied first, so that two threads waiting
   * on each other both go on. Call outside a write transaction.
   */
  awaitOthers (deadline: number): boolean {
    this.flush()
    return this.#options.turns?.awaitOthers(deadline) ?? true
  }

  /** Applies what is pending and removes the file, whose every entry is then in LMDB (graceful stop). */
  close (): void {
    this.flush()
    if (this.#fd !== undefined) this.#retire()
    if (this.#retired.length > 0) this.#options.store.write(() => this.#dropRetired())
  }

  #endTurnSoon (): void {
    if (this.#turnEnds) return
    this.#turnEnds = true
    setImmediate(() => {
      this.#turnEnds = false
      this.#lastTurn = this.#thisTurn
      this.#thisTurn = 0
      this.flush()
    })
  }

  #append (entry: E): void {
    if (this.#fd === undefined) this.#open()
    const json = JSON.stringify(entry)
    // One buffer, header and payload, for one write: UTF-8 takes at most three bytes per UTF-16 unit.
    if (this.#frame.length < HEADER + json.length * 3) this.#frame = Buffer.allocUnsafe(Math.max(HEADER + json.length * 3, this.#frame.length * 2))
    const frame = this.#frame
    const size = frame.write(json, HEADER, 'utf8')
    frame.writeUInt32LE(size, 0)
    frame.writeUInt32LE(crc32(frame.subarray(HEADER, HEADER + size)), 4)
    const length = HEADER + size
    // A short write (a full disk) must not leave half a frame that a later frame would follow: the journal would
    // stop there on replay. The request fails instead, and the next append starts where this one began.
    const written = writeSync(this.#fd!, frame, 0, length, this.#size)
    if (written !== length) throw new Error(`journal ${this.#file}: wrote ${written} of ${length} bytes`)
    if (this.#options.fsync) fdatasyncSync(this.#fd!)
    this.#size += length
  }

  #open (): void {
    const { dir, owner } = this.#options
    mkdirSync(dir, { recursive: true })
    // Ordered by name within an owner: the time, then a count for files opened in the same millisecond.
    for (let n = 0; ; n++) {
      const name = `${owner}.${String(Date.now()).padStart(15, '0')}.${n}.log`
      if (existsSync(join(dir, name))) continue
      this.#file = name
      break
    }
    this.#fd = openSync(join(dir, this.#file), 'wx')
    this.#size = 0
    this.#marked = 0
  }

  /** The file is wholly applied: it goes, and its meta key after it (a key without its file is never replayed). */
  #retire (): void {
    closeSync(this.#fd!)
    unlinkSync(join(this.#options.dir, this.#file))
    this.#retired.push(META + this.#file)
    this.#fd = undefined
  }

  #dropRetired (): void {
    for (const key of this.#retired) this.#options.store.meta.removeSync(key)
    this.#retired = []
  }
}

/** The whole frames of a journal file from offset on; a torn last frame (a crash mid-append) ends them. */
function readFrames (data: Buffer, offset: number): Array<{ payload: Buffer, end: number }> {
  const frames: Array<{ payload: Buffer, end: number }> = []
  let at = offset
  while (at + HEADER <= data.length) {
    const length = data.readUInt32LE(at)
    const end = at + HEADER + length
    if (end > data.length) break
    const payload = data.subarray(at + HEADER, end)
    if (crc32(payload) !== data.readUInt32LE(at + 4)) break
    frames.push({ payload, end })
    at = end
  }
  return frames
}

/**
 * Applies what journal files in dir hold past the point LMDB has them at, then removes the files: at a start, before
 * any thread appends (every owner), and when a hot thread is replaced (the dead thread's owner). Answers how many
 * entries it applied. Each batch records how far its file is applied in the transaction that applies it, so an
 * entry is applied exactly once, however often a recovery is cut short.
 */
export function recoverJournals<E> (store: Store, dir: string, apply: (entries: readonly E[]) => void, owner?: string): number {
  if (!existsSync(dir)) return 0
  const files = readdirSync(dir).filter((name) => name.endsWith('.log') && (owner === undefined || name.startsWith(`${owner}.`))).sort()
  let applied = 0
  for (const file of files) {
    const data = readFileSync(join(dir, file))
    const from = (store.meta.get(META + file) as number | undefined) ?? 0
    const frames = readFrames(data, from)
    for (let i = 0; i < frames.length; i += MAX_BATCH) {
      const batch = frames.slice(i, i + MAX_BATCH)
      store.write(() => {
        apply(batch.map(({ payload }) => JSON.parse(payload.toString('utf8')) as E))
        store.meta.putSync(META + file, batch[batch.length - 1]!.end)
      })
      applied += batch.length
    }
    unlinkSync(join(dir, file))
    store.write(() => store.meta.removeSync(META + file))
  }
  // Keys whose file went before its key did (a crash between the two).
  const orphans = [...store.meta.getKeys({ start: META, end: `${META}\uffff` })].filter((key) => {
    const name = String(key).slice(META.length)
    return (owner === undefined || name.startsWith(`${owner}.`)) && !existsSync(join(dir, name))
  })
  if (orphans.length > 0) store.write(() => { for (const key of orphans) store.meta.removeSync(key) })
  return applied
}
