import type { Store } from '../store/store.js'
import { claimable, type NameClaims } from './name-claims.js'

/** How long a lock outlives a request that died holding it, in log time: a later request then takes it over. */
export const LOCK_TTL_MS = 30_000

/**
 * How long a waiting request waits for word of the lock before it looks again: a lock taken over once its holder is
 * 30 s old sends no word.
 */
const LOOK_AGAIN_MS = 250

/** A record's lock among the names claimed in the names' log: what a write under it is fenced by (fenced-commits.ts). */
export const lockName = (record: string): string => `lock\u0000${record}`

/**
 * Records locked cluster-wide while a request rewrites them (RouteDef.exclusive): claims in the names' log
 * (src/cluster/name-claims.ts), decided in its order, so one request holds a record's lock however many nodes ask at
 * once, and none reads "free" from a follower that has not seen the holder yet. A lock held LOCK_TTL_MS in log time is
 * taken over by the next request (its holder died, or is paused): what the old holder writes after that is refused in
 * the same log, since a write under a lock is decided there against the lock's claim (fenced-commits.ts). They were
 * numbered holds made by KV creates, which nats-server 2.9.10 lets race (issue 47), and a missing hold read from a
 * lagging follower looked given back.
 */
export class RecordLocks {
  readonly #names: NameClaims
  readonly #store: Store
  /**
   * Once a claim is won, before its holder reads: the rows the lock's earlier holders wrote that the log keeps
   * uncopied go to the state bucket (fenced-commits.ts), or the holder would read the rows from before them.
   */
  readonly #settle: (name: string) => Promise<void>
  /** Requests waiting for a record's lock, by its name among the claims. */
  readonly #waiting = new Map<string, Set<() => void>>()
  /** The locks this node holds, by number: the claim each is. */
  readonly #held = new Map<number, { name: string, owner: string }>()
  #next = 0

  constructor (names: NameClaims, store: Store, settle: (name: string) => Promise<void>) {
    this.#names = names
    this.#store = store
    this.#settle = settle
  }

  /** The names' log applied a change to a claim (src/cluster/name-claims.ts): requests waiting for it look again. */
  changed (name: string): void {
    this.#waiting.get(name)?.forEach((wake) => wake())
  }

  /**
   * Takes the record's lock for owner, waiting while another holds it: the lock's number, or false past timeoutMs.
   * Throws when the engine cannot say (the names' log electing its leader past the ack timeout).
   */
  async lock (record: string, owner: string, timeoutMs: number): Promise<number | false> {
    const name = lockName(record)
    // A claim whose answer was lost (an election) may land after all: a request that gives up gives it back, or the
    // lock would stay with a request that is over until it is taken over, 30 s later.
    const n = await this.#lock(name, owner, timeoutMs).catch((err: unknown) => {
      this.#giveUp(name, owner)
      throw err
    })
    if (n === false) this.#giveUp(name, owner)
    return n
  }

  /**
   * Releases, sent again while the log has not decided them, until the lock would be taken over anyway: a release
   * lost in an election (as the claim's answer was) left the record locked for 30 s.
   */
  #giveUp (name: string, owner: string): void {
    void this.#names.release(name, owner, LOCK_TTL_MS)
  }

  async #lock (name: string, owner: string, timeoutMs: number): Promise<number | false> {
    const deadline = Date.now() + timeoutMs
    for (;;) {
      if (await this.#names.claim(name, owner, LOCK_TTL_MS)) {
        await this.#settle(name)
        const n = ++this.#next
        this.#held.set(n, { name, owner })
        return n
      }
      // Held by another: wait until this node's copy of the claims shows it given back (or old enough to take over),
      // then claim it again; the log decides which of the nodes waiting gets it.
      for (;;) {
        const left = deadline - Date.now()
        if (left <= 0) return false
        if (this.#free(name, owner)) break
        await this.#wake(name, Math.min(LOOK_AGAIN_MS, left))
      }
    }
  }

  /** Whether this node's copy of the claims shows the lock free for owner, by its clock (the log decides). */
  #free (name: string, owner: string): boolean {
    this.#store.refresh()
    return claimable(this.#store.nameClaims.get(name), owner, Date.now(), LOCK_TTL_MS)
  }

  /** Resolves when the claim changes here, or after ms. */
  async #wake (name: string, ms: number): Promise<void> {
    let set = this.#waiting.get(name)
    if (set === undefined) this.#waiting.set(name, set = new Set())
    const waiting = set
    let wake!: () => void
    const timer = setTimeout(() => wake(), ms)
    await new Promise<void>((resolve) => {
      wake = resolve
      waiting.add(resolve)
    })
    clearTimeout(timer)
    waiting.delete(wake)
    if (waiting.size === 0 && this.#waiting.get(name) === waiting) this.#waiting.delete(name)
  }

  /** Gives lock n of the record back. */
  unlock (n: number): void {
    const held = this.#held.get(n)
    if (held === undefined) return
    this.#held.delete(n)
    this.#giveUp(held.name, held.owner)
  }
}
