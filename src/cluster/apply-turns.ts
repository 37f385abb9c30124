import type { Logger } from '../log.js'
import type { Store } from '../store/store.js'

/**
 * A log's share of a turn: its writes, made inside the turn's transaction, answering what to do once they commit. It
 * may be run a second time, after the turn threw (rolled back, or committed and then thrown by work that runs after a
 * commit): it then reads how far it got from the store, never from memory, so that nothing is applied twice.
 */
export type TurnWork = () => () => void

/**
 * What the logs a node follows delivered in one turn of its event loop, applied in one write transaction. Sixteen
 * partitions' logs, the claims' and the others each deliver a few entries at a time, and a commit a log was most of
 * what applying them cost: LMDB writes every page a commit dirtied, and the logs' entries dirty the same tables
 * (their marks, verdicts and keys, the bookings' counts). A throw is logged, and each share is then run again in a
 * transaction of its own, so that one log's failure stays its own: every write a log's apply makes, a machine's
 * included, is in the store, so a share rolled back and run again does it once.
 */
export class ApplyTurns {
  readonly #store: Store
  readonly #log: Logger | undefined
  #queued: Array<{ work: TurnWork, failed: (err: unknown) => void }> = []

  constructor (store: Store, log?: Logger) {
    this.#store = store
    this.#log = log
  }

  /** Applies work in this turn's transaction; failed hears why when it throws alone. */
  soon (work: TurnWork, failed: (err: unknown) => void): void {
    if (this.#queued.push({ work, failed }) === 1) setImmediate(() => this.#run())
  }

  #run (): void {
    const turn = this.#queued
    this.#queued = []
    let committed: Array<() => void>
    try {
      committed = this.#store.write(() => turn.map(({ work }) => work()))
    } catch (err) {
      if (turn.length === 1) return turn[0]!.failed(err)
      this.#log?.warn('logs: a turn\'s transaction threw; each log\'s entries are applied again alone', { logs: turn.length, error: err instanceof Error ? err.message : String(err) })
      for (const { work, failed } of turn) {
        let done: () => void
        try {
          done = this.#store.write(work)
        } catch (err) {
          failed(err)
          continue
        }
        done()
      }
      return
    }
    for (const done of committed) done()
  }
}
