import { randomUUID } from 'node:crypto'
import type { Clock } from '../clock.js'
import { iso } from '../clock.js'
import type { OutboxEvent } from './records.js'
import type { Store } from './store.js'

/**
 * The transactional outbox (DESIGN principle 3): domain events are appended inside the same LMDB transaction as the
 * state change that causes them, so both commit or neither does. Consumers (webhook dispatcher, analytics shipper)
 * each keep a cursor; an event is deleted only after every registered consumer has acknowledged it.
 */
export class Outbox {
  readonly #store: Store
  readonly #clock: Clock
  #wake: (() => void) | undefined

  constructor (store: Store, clock: Clock) {
    this.#store = store
    this.#clock = clock
    const [last] = [...store.outbox.getKeys({ reverse: true, limit: 1 })]
    if (typeof last === 'number' && last > ((store.meta.get('outbox:seq') as number | undefined) ?? 0)) store.write(() => store.meta.putSync('outbox:seq', last))
  }

  /**
   * Appends an event; call inside Store.write so it commits with the change that caused it. A cluster node's change
   * written under a record's lock keeps its events until the names' log has accepted it (ChangeLog.hold), and they
   * are appended then (release), or never.
   */
  append (type: string, subject: string, data: Record<string, unknown>, seatId?: string): void {
    const event: Omit<OutboxEvent, 'seq'> = { id: `evt_${randomUUID()}`, type, subject, at: iso(this.#clock.now()), data }
    if (seatId !== undefined) event.seat_id = seatId
    if (this.#store.changes?.hold(event) === true) return
    this.#put(event)
  }

  /** Appends events a change held until the names' log accepted it (inside a write), raised when it was made. */
  release (events: unknown[]): void {
    for (const event of events) this.#put(event as Omit<OutboxEvent, 'seq'>)
  }

  /**
   * The sequence is read from the high-water mark inside the transaction: every thread's appends hold LMDB's write
   * lock, so they number in order.
   */
  #put (raised: Omit<OutboxEvent, 'seq'>): void {
    const seq = ((this.#store.meta.get('outbox:seq') as number | undefined) ?? 0) + 1
    const event: OutboxEvent = { seq, ...raised }
    this.#store.outbox.putSync(seq, event)
    // The high-water mark survives compaction, so sequence numbers are never reused.
    this.#store.meta.putSync('outbox:seq', seq)
    if (event.type.startsWith('audit.')) this.#store.audit.putSync(seq, event)
    const wake = this.#wake
    if (wake !== undefined) this.#store.afterCommit(wake)
  }

  /** Lets a consumer start as soon as an append commits, instead of polling. */
  onAppend (wake: () => void): void {
    this.#wake = wake
  }

  /** Declares a consumer; events are kept until it acknowledges them. */
  register (consumer: string): void {
    if (this.#store.meta.get(`outbox:cursor:${consumer}`) === undefined) {
      this.#store.write(() => this.#store.meta.putSync(`outbox:cursor:${consumer}`, 0))
    }
  }

  /** Up to limit events the consumer has not acknowledged, oldest first. */
  read (consumer: string, limit: number): OutboxEvent[] {
    const cursor = (this.#store.meta.get(`outbox:cursor:${consumer}`) as number | undefined) ?? 0
    return [...this.#store.outbox.getRange({ start: cursor + 1, limit })].map(({ value }) => value)
  }

  /** Marks every event up to seq as delivered to the consumer, and deletes what all consumers have. */
  ack (consumer: string, seq: number): void {
    this.#store.write(() => {
      this.#store.meta.putSync(`outbox:cursor:${consumer}`, seq)
      const floor = this.#floor()
      for (const key of this.#store.outbox.getKeys({ end: floor + 1 })) this.#store.outbox.removeSync(key)
    })
  }

  /** Number of events still held. */
  size (): number {
    return this.#store.outbox.getCount()
  }

  #floor (): number {
    let floor = Infinity
    for (const { key, value } of this.#store.meta.getRange({ start: 'outbox:cursor:', end: 'outbox:cursor;' })) {
      if (typeof key === 'string') floor = Math.min(floor, value as number)
    }
    return floor === Infinity ? 0 : floor
  }
}
