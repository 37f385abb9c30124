interface Waiter { at: number, settle: (reached: boolean) => void }

/** Promises that settle once a mark that only grows reaches their number: true then, false when their time runs out first. */
export class MarkWaiters {
  #waiting: Waiter[] = []

  /** Waits for the mark to reach at (the caller has seen it below); without timeoutMs, for as long as it takes. */
  wait (at: number, timeoutMs?: number): Promise<boolean> {
    return new Promise((resolve) => {
      const timer = timeoutMs === undefined ? undefined : setTimeout(() => { this.#waiting = this.#waiting.filter((w) => w !== entry); resolve(false) }, timeoutMs)
      const entry: Waiter = { at, settle: (reached: boolean) => { clearTimeout(timer); resolve(reached) } }
      this.#waiting.push(entry)
    })
  }

  /** The mark is at mark now: settles every wait it reached. */
  reached (mark: number): void {
    if (this.#waiting.length === 0) return
    const still: Waiter[] = []
    for (const w of this.#waiting) {
      if (w.at <= mark) w.settle(true)
      else still.push(w)
    }
    this.#waiting = still
  }
}
