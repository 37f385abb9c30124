import { DeliverPolicy, NatsError, type Consumer, type ConsumerMessages } from 'nats'
import type { Logger } from '../log.js'
import { retryWithBackoff, within } from '../retry.js'
import { partitionFilter } from './book-parts.js'
import { BOOK_STREAM, type Engine } from './engine.js'
import { Opens } from './opens.js'

/** How long opening a partition's consumer, or reading where the stream stands, may take before it is tried again. */
const OPEN_WAIT_MS = 10_000

/** The last change of this node's changes a round carries, from its message id (`<incarnation>.<first>-<last>.<partition>.<n>`). */
function roundThrough (msgId: string): number {
  const through = Number(/\.\d+-(\d+)\./.exec(msgId)?.[1])
  return Number.isSafeInteger(through) ? through : 0
}

/** The stream sequence of a partition's newest message in the book stream, 0 for none. */
async function lastOf (engine: Engine, partition: number): Promise<number> {
  try {
    return (await engine.jsm.streams.getMessage(BOOK_STREAM, { last_by_subj: partitionFilter(partition) })).seq
  } catch (err) {
    if (err instanceof NatsError && err.code === '404') return 0
    throw err
  }
}

/** A partition whose bids this node applies: its consumer of the partition's subject of the book stream. */
export class PartitionBook {
  readonly partition: number
  /**
   * The partition's newest message when it was taken on (undefined until read): its messages up to there are what the
   * nodes shipped before, this node's own rounds of that time included (it dropped its copy of the partition to read
   * them again), and all are applied before a spot is decided here; its own rounds after are rows it wrote itself
   * since, in their order.
   */
  head: number | undefined
  /** The last message of the partition applied (stream sequence): a consumer opened again resumes after it. */
  at = 0
  /** The last of this node's changes seen come back in the partition's messages: any of its later changes has not landed. */
  ownThrough = 0
  /**
   * This node's bids of the partition acknowledged since it was taken on and not yet come back in its messages, by
   * state key, with their change's seq: its copy holds them newer than what comes before them in the partition's order.
   */
  readonly unreturned = new Map<string, number>()
  /** Whether every message up to head is applied: the partition's spots are decided here. */
  serving = false
  messages: ConsumerMessages | undefined
  consumer: Consumer | undefined
  readonly opens = new Opens()
  lastChecked = -1

  constructor (partition: number) {
    this.partition = partition
  }
}

/**
 * One message of a held partition, in the stream's order, for the applier's next transaction; or, with no data, word
 * that its consumer opened with every message up to the partition's head applied already (none, for a partition with
 * no bids yet).
 */
export type BookArrival =
  | { book: PartitionBook, seq: number, data: Uint8Array, own: boolean, through: number }
  | { book: PartitionBook, caughtUp: true }

/**
 * The consumers of the partitions whose bids this node applies, one each, filtered to the partition's subject
 * (src/cluster/book-parts.ts) and read from the stream's start: the stream keeps the bids as long as they can win, so
 * it is the partition's whole book, and a node consumes no message of a partition it does not hold. nats-server
 * 2.9.10 takes one filter subject a consumer, hence a consumer per partition.
 */
export class PartitionBooks {
  readonly #held = new Map<number, PartitionBook>()
  readonly #incarnation: string
  readonly #log: Logger
  readonly #arrive: (arrival: BookArrival) => void
  #stopped = false

  /** incarnation: this data directory's name in the engine, which names its rounds (its own come back). */
  constructor (deps: { incarnation: string, log: Logger, arrive: (arrival: BookArrival) => void }) {
    this.#incarnation = deps.incarnation
    this.#log = deps.log
    this.#arrive = deps.arrive
  }

  /** Whether the book is still the one held for its partition (not released, or released and taken on again). */
  current (book: PartitionBook): boolean {
    return !this.#stopped && this.#held.get(book.partition) === book
  }

  holds (partition: number): boolean {
    return this.#held.has(partition)
  }

  /** The book held for a partition. */
  book (partition: number): PartitionBook | undefined {
    return this.#held.get(partition)
  }

  /** Starts applying a partition's bids: its consumer opens from the stream's start. */
  hold (engine: Engine, partition: number): void {
    if (this.#held.has(partition)) return
    const book = new PartitionBook(partition)
    this.#held.set(partition, book)
    this.#open(engine, book)
  }

  /** Stops applying a partition's bids: whether it was held. */
  release (partition: number): boolean {
    const book = this.#held.get(partition)
    if (book === undefined) return false
    this.#held.delete(partition)
    book.messages?.stop()
    return true
  }

  stop (): void {
    this.#stopped = true
    for (const book of this.#held.values()) book.messages?.stop()
    this.#held.clear()
  }

  /**
   * A consumer can stall after an engine member's loss: one that has delivered nothing since the last look while its
   * partition has messages it has not delivered is opened again (an open that takes too long is tried again by its own
   * loop, #consume). A partition not served yet whose newest message at its taking on has aged out of the stream
   * since (the stream keeps bids as long as they can win) is read through the newest it has now.
   */
  async check (engine: Engine): Promise<void> {
    for (const book of [...this.#held.values()]) {
      if (book.opens.pending) continue
      if (!book.serving && book.head !== undefined && book.head > book.at) {
        const newest = await lastOf(engine, book.partition).catch(() => book.head!)
        if (newest < book.head && this.current(book)) {
          book.head = newest
          if (book.at >= newest) this.#arrive({ book, caughtUp: true })
        }
      }
      const at = book.at
      const moved = at !== book.lastChecked
      book.lastChecked = at
      if (moved || book.consumer === undefined || book.messages === undefined) continue
      const messages = book.messages
      const pending = await book.consumer.info().then((info) => info.num_pending, () => 1)
      if (pending > 0 && book.at === at && book.messages === messages && this.current(book)) {
        this.#log.warn('cluster: a partition\'s book is behind and not moving; reading it again', { partition: book.partition, applied: at })
        messages.stop()
      }
    }
  }

  #open (engine: Engine, book: PartitionBook): void {
    void retryWithBackoff(() => this.#consume(engine, book), () => !this.current(book) || book.messages !== undefined, (err, retryInMs) => {
      this.#log.warn('cluster: reading a partition\'s bids from the book failed; trying again', { partition: book.partition, retry_in_ms: retryInMs, error: err instanceof Error ? err.message : String(err) })
    })
  }

  async #consume (engine: Engine, book: PartitionBook): Promise<void> {
    const opened = book.opens.begin()
    book.head ??= await within(OPEN_WAIT_MS, 'reading the book stream', lastOf(engine, book.partition))
    // From sequence 1 for a partition not read yet (nats.js's ordered consumer with DeliverPolicy.All on an empty
    // stream never starts consuming), else after the last message applied.
    const consumer = await within(OPEN_WAIT_MS, 'opening a partition\'s book', engine.js.consumers.get(BOOK_STREAM, { filterSubjects: partitionFilter(book.partition), deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: book.at + 1 }))
    // A consume given up on (it waited past OPEN_WAIT_MS, and the next try opens another) is stopped when it opens
    // after all: left, it would read the partition into a buffer nobody empties.
    const consuming = consumer.consume()
    const messages = await within(OPEN_WAIT_MS, 'opening a partition\'s book', consuming).catch((err: unknown) => {
      consuming.then((late) => late.stop(), () => {})
      throw err
    })
    if (!opened() || !this.current(book)) {
      messages.stop()
      return
    }
    book.messages?.stop()
    book.consumer = consumer
    book.messages = messages
    book.opens.opened()
    const own = `${this.#incarnation}.`
    void (async () => {
      for await (const m of messages) {
        if (book.messages !== messages) break
        const id = m.headers?.get('Nats-Msg-Id') ?? ''
        const mine = id.startsWith(own)
        this.#arrive({ book, seq: m.seq, data: m.data, own: mine, through: mine ? roundThrough(id) : 0 })
      }
    })().then(() => this.#ended(engine, book, messages, 'ended'), (err: unknown) => this.#ended(engine, book, messages, err))
    if (!book.serving && book.at >= book.head) this.#arrive({ book, caughtUp: true })
  }

  #ended (engine: Engine, book: PartitionBook, messages: ConsumerMessages, why: unknown): void {
    if (book.messages === messages && this.current(book)) this.#reopen(engine, book, why)
  }

  #reopen (engine: Engine, book: PartitionBook, why: unknown): void {
    book.messages?.stop()
    book.messages = undefined
    this.#log.warn('cluster: a partition\'s book ended; reading it again from the last applied', { partition: book.partition, applied: book.at, error: why instanceof Error ? why.message : String(why) })
    setTimeout(() => { if (this.current(book)) this.#open(engine, book) }, 500)
  }
}
