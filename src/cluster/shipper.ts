import { headers } from 'nats'
import type { Logger } from '../log.js'
import type { ChangeLog } from '../store/changes.js'
import type { Store } from '../store/store.js'
import { STATE_BUCKET, type Engine } from './engine.js'
import { packValue, stateKey } from './state-keys.js'

/** Transactions' changes published to the engine in one round of acknowledgements. */
const BATCH = 256

/**
 * Ships the node's recorded changes (src/store/changes.ts) to the state bucket, in commit order, one KV message per
 * row, and deletes them once the engine has acknowledged every one: a quorum of its members holds them. One shipper
 * per node, so a row's later value is never published before its earlier one. Each message carries the id
 * `<incarnation>.<seq>.<n>`: a publish whose acknowledgement was lost and is sent again is dropped by JetStream's
 * duplicate window instead of writing an old value over a newer one from another node.
 */
export class ChangeShipper {
  readonly #store: Store
  readonly #changes: ChangeLog
  readonly #engine: Engine
  readonly #incarnation: string
  readonly #log: Logger
  readonly #onShipped: (through: number) => void
  #running: Promise<void> | undefined
  #again = false
  #failing = false

  constructor (deps: { store: Store, changes: ChangeLog, engine: Engine, incarnation: string, log: Logger, onShipped: (through: number) => void }) {
    this.#store = deps.store
    this.#changes = deps.changes
    this.#engine = deps.engine
    this.#incarnation = deps.incarnation
    this.#log = deps.log
    this.#onShipped = deps.onShipped
  }

  /** Ships what is waiting (again, once the round under way ends). */
  kick (): void {
    if (this.#running !== undefined) {
      this.#again = true
      return
    }
    this.#running = this.#ship().finally(() => { this.#running = undefined })
  }

  /** Resolves once no round is under way. */
  async idle (): Promise<void> {
    while (this.#running !== undefined) await this.#running
  }

  async #ship (): Promise<void> {
    do {
      this.#again = false
      this.#store.refresh()
      const batch = this.#changes.pending(BATCH)
      if (batch.length === 0) return
      try {
        await Promise.all(batch.flatMap(({ seq, changes }) => changes.map(([table, key, value], n) => {
          const subject = `$KV.${STATE_BUCKET}.${stateKey(table, key)}`
          const msgID = `${this.#incarnation}.${seq}.${n}`
          if (value !== undefined) return this.#engine.js.publish(subject, packValue(value), { msgID })
          const h = headers()
          h.set('KV-Operation', 'DEL')
          return this.#engine.js.publish(subject, undefined, { msgID, headers: h })
        })))
      } catch (err) {
        // The changes stay recorded; the next kick (the supervisor's timer at the latest) ships them again.
        if (!this.#failing) this.#log.warn('cluster: the engine did not acknowledge changes; they wait in LMDB', { error: err instanceof Error ? err.message : String(err), waiting_transactions: batch.length })
        this.#failing = true
        return
      }
      if (this.#failing) this.#log.info('cluster: the engine acknowledges changes again')
      this.#failing = false
      const through = batch[batch.length - 1]!.seq
      this.#store.write(() => this.#changes.shipped(through))
      this.#onShipped(through)
      if (batch.length === BATCH) this.#again = true
    } while (this.#again)
  }
}
