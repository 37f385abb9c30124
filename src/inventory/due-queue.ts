/** Buckets of screen ids keyed by the second something is due for them (freshness expiry, heartbeat deadline). */
export class DueQueue {
  readonly #buckets = new Map<number, Set<string>>()

  add (at: number, id: string): void {
    const second = Math.ceil(at / 1000)
    let set = this.#buckets.get(second)
    if (set === undefined) { set = new Set(); this.#buckets.set(second, set) }
    set.add(id)
  }

  /** Removes and returns the ids due up to the end of the current second; callers re-add what is not due yet. */
  take (now: number): string[] {
    const out: string[] = []
    const second = Math.ceil(now / 1000)
    for (const [s, ids] of this.#buckets) {
      if (s > second) continue
      for (const id of ids) out.push(id)
      this.#buckets.delete(s)
    }
    return out
  }
}
