/**
 * A question to the engine that callers asking at the same moment share, but never one asked before a caller came: its
 * answer could miss what was acknowledged just before that caller asked. Callers arriving while one is on its way
 * share the next. (How far has the state bucket, or a log, got: a storm of requests catching up asks once a round
 * trip, not once a request.)
 */
export class SharedQuestion<T> {
  readonly #ask: () => Promise<T>
  #asking: Promise<T> | undefined
  #next: Promise<T> | undefined

  constructor (ask: () => Promise<T>) {
    this.#ask = ask
  }

  answer (): Promise<T> {
    if (this.#asking === undefined) return this.#start()
    this.#next ??= this.#asking.catch(() => undefined).then(() => {
      this.#next = undefined
      return this.#start()
    })
    return this.#next
  }

  #start (): Promise<T> {
    const asking = this.#asking = this.#ask().finally(() => { if (this.#asking === asking) this.#asking = undefined })
    return asking
  }
}
