/** Per thread, two slots: whether it holds journaled writes not yet applied, and how many turns it has applied. */
const PENDING = 0
const APPLIED = 1
const WIDTH = 2

/**
 * Which threads hold journaled writes that LMDB does not have yet, in memory the threads share. A journaled answer
 * is written once its writes are durable in its thread's journal, and they reach LMDB with the rest of the turn: under
 * load a thread can be descheduled between the two, and the client's next request, served by another thread, would
 * not see what it was told was done (a bid acknowledged and missing from the next spot decision, a spot given and
 * unknown to its own report). A reader that must see every answer given before it waits for the turns under way to
 * commit (Journal.awaitOthers).
 */
export class JournalTurns {
  /** The shared memory for the supervisor (thread 0) and hot threads 1..threads. */
  static memory (threads: number): SharedArrayBuffer {
    return new SharedArrayBuffer((threads + 1) * WIDTH * 4)
  }

  readonly #slots: Int32Array
  readonly #thread: number

  constructor (memory: SharedArrayBuffer, thread: number) {
    this.#slots = new Int32Array(memory)
    this.#thread = thread
  }

  /** This thread appended a write to its journal that its turn's end will apply. */
  journaled (): void {
    Atomics.store(this.#slots, this.#thread * WIDTH + PENDING, 1)
  }

  /** Everything this thread journaled is in LMDB (its turn committed, or a replacement replayed its journal). */
  applied (): void {
    const base = this.#thread * WIDTH
    Atomics.store(this.#slots, base + PENDING, 0)
    Atomics.add(this.#slots, base + APPLIED, 1)
    Atomics.notify(this.#slots, base + APPLIED)
  }

  /**
   * Waits until every other thread that held journaled writes now has applied them, or until the deadline
   * (performance.now() ms); false at the deadline. Call holding nothing another thread's turn needs: no write
   * transaction, and nothing journaled by this thread (Journal.awaitOthers applies it first).
   */
  awaitOthers (deadline: number): boolean {
    const slots = this.#slots
    for (let base = 0; base < slots.length; base += WIDTH) {
      if (base === this.#thread * WIDTH) continue
      // The count first: a turn that commits between the two reads has cleared the flag, or moved the count.
      const turns = Atomics.load(slots, base + APPLIED)
      if (Atomics.load(slots, base + PENDING) === 0) continue
      while (Atomics.load(slots, base + APPLIED) === turns) {
        const left = deadline - performance.now()
        if (left <= 0) return false
        Atomics.wait(slots, base + APPLIED, turns, left)
      }
    }
    return true
  }
}
