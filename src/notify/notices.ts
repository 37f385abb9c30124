import { randomUUID } from 'node:crypto'
import type { NoticeRecord } from '../store/records.js'
import type { Store } from '../store/store.js'

/** What a caller says about a notice; the queue adds its id, attempt count and time. */
export type NoticeDraft = Omit<NoticeRecord, 'id' | 'attempts' | 'created_at'>

/**
 * The durable queue of outbound notices (win, loss and billing URLs, legacy notifications). A notice is enqueued in
 * the transaction of the auction or play that caused it, so it exists exactly when that outcome does; the sender
 * (src/notify/sender.ts) deletes it only once it was delivered or finally given up. Rows are keyed [due ms, id].
 */
export class Notices {
  readonly #store: Store
  #wake: (() => void) | undefined

  constructor (store: Store) {
    this.#store = store
  }

  /** Enqueues a notice, due at `at`; call inside Store.write. */
  enqueue (draft: NoticeDraft, at: number): NoticeRecord {
    const notice: NoticeRecord = { ...draft, id: `ntf_${randomUUID()}`, attempts: 0, created_at: at }
    this.#store.notices.putSync([at, notice.id], notice)
    const wake = this.#wake
    if (wake !== undefined) this.#store.afterCommit(wake)
    return notice
  }

  /** Lets the sender start at once when something commits, instead of at its next poll. */
  onEnqueue (wake: () => void): void {
    this.#wake = wake
  }

  /** Notices due by `now`, oldest first, skipping ids already being sent. */
  due (now: number, limit: number, skip: ReadonlySet<string>): Array<{ key: [number, string], notice: NoticeRecord }> {
    const out: Array<{ key: [number, string], notice: NoticeRecord }> = []
    for (const { key, value } of this.#store.notices.getRange({ end: [now, '\uffff'] } as never)) {
      if (skip.has(value.id)) continue
      out.push({ key: key as unknown as [number, string], notice: value })
      if (out.length >= limit) break
    }
    return out
  }

  /** How many notices wait, for /metrics and tests. */
  size (): number {
    return this.#store.notices.getCount()
  }
}
