import { randomUUID } from 'node:crypto'
import type { HeldNotice, NoticeDraft, NoticeRecord } from './records.js'
import type { Store } from '../store/store.js'

export type { NoticeDraft }

/** A queued notice's key: the receiver's origin, when it is due (ms), its id. */
export type NoticeKey = [string, number, string]

/** scheme://host:port of a URL, without parsing it (a malformed URL still has a queue to wait in until it is refused). */
export function originOf (url: string): string {
  const start = url.indexOf('//')
  const end = url.indexOf('/', start === -1 ? 0 : start + 2)
  return end === -1 ? url : url.slice(0, end)
}

/**
 * The durable queue of outbound notices (win, loss and billing URLs, legacy notifications, webhook deliveries). A
 * notice is enqueued in the transaction of the auction, play or event that caused it, so it exists exactly when that
 * outcome does; the sender (src/notify/sender.ts) deletes it only once it was delivered or finally given up. Rows are
 * keyed by receiver first ([origin, due ms, id]), so the sender reads each receiver's next due notices directly: a
 * receiver with a large backlog costs no scan and delays no other receiver.
 */
export class Notices {
  readonly #store: Store
  /** Origins with queued notices, each with when its earliest is due (as far as known); an origin found empty is forgotten. */
  readonly #origins = new Map<string, number>()
  #wake: ((origin: string, at: number) => void) | undefined

  constructor (store: Store) {
    this.#store = store
    // A queue written before rows were keyed by origin ([due ms, id]; numbers sort before strings) moves over once.
    const old = [...store.notices.getRange({ end: [''] } as never)]
    if (old.length > 0) {
      store.write(() => {
        for (const { key, value } of old) {
          store.notices.removeSync(key)
          store.notices.putSync([originOf(value.url), (key as unknown as [number, string])[0], value.id], value)
        }
      })
    }
    for (let key = this.#firstKey(''); key !== undefined; key = this.#firstKey(key[0] + '\u0000')) this.#origins.set(key[0], 0)
  }

  /** The first queued key from [from] on, before [end] when given. */
  #firstKey (from: string, end?: string): NoticeKey | undefined {
    for (const key of this.#store.notices.getKeys({ start: [from], ...(end !== undefined ? { end: [end] } : {}), limit: 1 } as never)) return key as unknown as NoticeKey
    return undefined
  }

  /** Enqueues a notice, due at `at`, under the given id (webhook deliveries bring their del_ id); call inside Store.write. */
  enqueue (draft: NoticeDraft, at: number, id = `ntf_${randomUUID()}`): NoticeRecord {
    const notice: NoticeRecord = { ...draft, id, attempts: 0, created_at: at }
    this.#store.notices.putSync([originOf(notice.url), at, notice.id], notice)
    const origin = originOf(notice.url)
    this.#soonest(origin, at)
    const wake = this.#wake
    if (wake !== undefined) this.#store.afterCommit(() => wake(origin, at))
    return notice
  }

  /**
   * Holds a settlement's notices under its key until its log's verdict (release or drop): a cluster node's decision
   * counts only once its partition's log accepts it, and a buyer told it won a spot that another node sold must not
   * be. Call inside Store.write.
   */
  hold (key: string, drafts: readonly NoticeDraft[], at: number): void {
    for (let n = 0; n < drafts.length; n++) this.#store.heldNotices.putSync([key, n], { draft: drafts[n]!, at })
  }

  /** Queues what a settlement accepted held (hold); call inside Store.write. */
  release (key: string): void {
    for (const { key: held, value } of this.#held(key)) {
      this.enqueue(value.draft, value.at)
      this.#store.heldNotices.removeSync(held)
    }
  }

  /** Drops what a refused settlement held (hold); call inside Store.write. */
  drop (key: string): void {
    for (const { key: held } of this.#held(key)) this.#store.heldNotices.removeSync(held)
  }

  #held (key: string): Array<{ key: [string, number], value: HeldNotice }> {
    return [...this.#store.heldNotices.getRange({ start: [key, 0], end: [key, Infinity] } as never)] as Array<{ key: [string, number], value: HeldNotice }>
  }

  /**
   * Lets the sender start at once when something commits, instead of at its next poll. A hot thread's queue hands the
   * origin on to the supervisor's, which notes it (noted) for its sender.
   */
  onEnqueue (wake: (origin: string, at: number) => void): void {
    this.#wake = wake
  }

  /** Another thread enqueued a notice for origin, due at `at`. */
  noted (origin: string, at: number): void {
    this.#soonest(origin, at)
  }

  #soonest (origin: string, at: number): void {
    this.#origins.set(origin, Math.min(this.#origins.get(origin) ?? Infinity, at))
  }

  /** The origins that may have notices due by `now`, in the order they were first seen. */
  origins (now: number): string[] {
    const out: string[] = []
    for (const [origin, due] of this.#origins) if (due <= now) out.push(origin)
    return out
  }

  /**
   * Up to `limit` notices of one origin due by `now`, oldest first, passing over the ids in `skip`. With none due, it
   * notes when the origin's next notice is, so that passes skip it until then, or forgets an origin with nothing queued.
   */
  due (origin: string, now: number, limit: number, skip: ReadonlySet<string>): Array<{ key: NoticeKey, notice: NoticeRecord }> {
    const out: Array<{ key: NoticeKey, notice: NoticeRecord }> = []
    if ((this.#origins.get(origin) ?? Infinity) > now) return out
    let any = false
    for (const { key, value } of this.#store.notices.getRange({ start: [origin], end: [origin, now, '\uffff'] } as never)) {
      any = true
      if (skip.has(value.id)) continue
      out.push({ key: key as unknown as NoticeKey, notice: value })
      if (out.length >= limit) break
    }
    if (!any) {
      const next = this.#firstKey(origin, origin + '\u0000')
      if (next === undefined) this.#origins.delete(origin)
      else this.#origins.set(origin, next[1])
    }
    return out
  }

  /** Puts a notice back for its next attempt at `at`; call inside Store.write. */
  reschedule (key: NoticeKey, notice: NoticeRecord, at: number): void {
    this.#store.notices.removeSync(key)
    this.#store.notices.putSync([key[0], at, notice.id], notice)
    this.#soonest(key[0], at)
  }

  /** Removes a notice; call inside Store.write. */
  remove (key: NoticeKey): void {
    this.#store.notices.removeSync(key)
  }

  /** Every queued notice of one origin (to cancel some), oldest first. */
  queued (origin: string): Array<{ key: NoticeKey, notice: NoticeRecord }> {
    return [...this.#store.notices.getRange({ start: [origin], end: [origin + '\u0000'] } as never)].map(({ key, value }) => ({ key: key as unknown as NoticeKey, notice: value }))
  }

  /** How many notices wait, for /metrics and tests. */
  size (): number {
    return this.#store.notices.getCount()
  }
}
