import { randomBytes } from 'node:crypto'
import type { Clock } from '../clock.js'
import { onNextTurn } from '../next-turn.js'
import type { Logger } from '../log.js'
import type { Notices } from '../notify/notices.js'
import type { Outbox } from '../store/outbox.js'
import type { Store } from '../store/store.js'
import type { DeliveryLog } from './delivery-log.js'
import { recipients } from './recipients.js'

const CONSUMER = 'webhooks'
const BATCH = 500

/**
 * Fans outbox events out to webhook deliveries. Each batch is one transaction: the deliveries are queued (with their
 * log entries) and the consumer's outbox cursor advances together, so a crash at any point either redoes the whole
 * batch or none of it: no event is lost or queued twice. Sending is the NoticeSender's job.
 */
export class WebhookDispatcher {
  readonly #store: Store
  readonly #outbox: Outbox
  readonly #notices: Notices
  readonly #log: DeliveryLog
  readonly #clock: Clock
  readonly #logger: Logger
  #closed = false

  constructor (deps: { store: Store, outbox: Outbox, notices: Notices, deliveries: DeliveryLog, clock: Clock, log: Logger }) {
    this.#store = deps.store
    this.#outbox = deps.outbox
    this.#notices = deps.notices
    this.#log = deps.deliveries
    this.#clock = deps.clock
    this.#logger = deps.log
    this.#outbox.register(CONSUMER)
    this.#outbox.onAppend(() => this.kick())
  }

  /** Dispatches what the outbox holds (events left by a crash first), then whatever is appended. */
  start (): void {
    this.kick()
  }

  /** Dispatches soon; many appends in one tick make one pass. */
  readonly kick = onNextTurn(() => {
    if (this.#closed) return
    try {
      this.drain()
    } catch (err) {
      this.#logger.error('webhook dispatch failed', { error: String(err) })
    }
  })

  /** Dispatches every event waiting; returns how many deliveries it queued. */
  drain (): number {
    let queued = 0
    for (;;) {
      const events = this.#outbox.read(CONSUMER, BATCH)
      if (events.length === 0 || this.#closed) return queued
      const now = this.#clock.now()
      this.#store.write(() => {
        for (const event of events) {
          const targets = recipients(this.#store, event)
          if (targets.length === 0) continue
          const data = JSON.stringify({ event_id: event.id, occurred_at: event.at, object: event.data })
          for (const r of targets) {
            const draft = { kind: 'webhook' as const, url: r.url, seat_id: r.seatId, event: event.type, body: data, ...(r.webhookId !== undefined ? { webhook_id: r.webhookId } : {}) }
            this.#log.opened(this.#notices.enqueue(draft, now, `del_${randomBytes(12).toString('hex')}`), event.id)
            queued++
          }
        }
        this.#outbox.ack(CONSUMER, events[events.length - 1]!.seq)
      })
    }
  }

  /** Stops dispatching; what is left waits in the outbox for the next start. */
  close (): void {
    this.#closed = true
  }
}
