/** One end of a message channel between the supervisor and a hot thread: a Worker, or parentPort inside it. */
export interface Port {
  postMessage (message: unknown): void
  on (event: 'message', listener: (message: unknown) => void): unknown
}

type Message =
  | { rpc: 'call', id: number, op: string, args: unknown[] }
  | { rpc: 'return', id: number, value: unknown }
  | { rpc: 'throw', id: number, message: string }
  | { rpc: 'notify', op: string, args: unknown[] }

/** What one side answers: calls return a value (or a promise of one); notifications return nothing. */
export type Handlers = Record<string, (...args: any[]) => unknown>

/**
 * Calls and notifications over a thread's message port. A call settles with the other side's return value or its
 * error's message; a notification is one-way (logs, wake-ups). Calls still open when the other side dies are refused
 * (closed), so a waiting request answers instead of hanging.
 */
export class Rpc {
  readonly #port: Port
  readonly #handlers: Handlers
  readonly #open = new Map<number, { resolve: (v: unknown) => void, reject: (e: Error) => void }>()
  #next = 1

  /** before: runs ahead of every call and notification handled (the store's refresh: the sender committed first). */
  constructor (port: Port, handlers: Handlers, before?: () => void) {
    this.#port = port
    this.#handlers = handlers
    port.on('message', (m) => {
      before?.()
      this.#receive(m as Message)
    })
  }

  call<T = unknown> (op: string, ...args: unknown[]): Promise<T> {
    const id = this.#next++
    return new Promise<T>((resolve, reject) => {
      this.#open.set(id, { resolve: resolve as (v: unknown) => void, reject })
      this.#port.postMessage({ rpc: 'call', id, op, args } satisfies Message)
    })
  }

  notify (op: string, ...args: unknown[]): void {
    this.#port.postMessage({ rpc: 'notify', op, args } satisfies Message)
  }

  /** Refuses every call still waiting: the other side is gone. */
  closed (why: string): void {
    for (const { reject } of this.#open.values()) reject(new Error(why))
    this.#open.clear()
  }

  #receive (m: Message): void {
    if (m.rpc === 'return' || m.rpc === 'throw') {
      const open = this.#open.get(m.id)
      if (open === undefined) return
      this.#open.delete(m.id)
      if (m.rpc === 'return') open.resolve(m.value)
      else open.reject(new Error(m.message))
      return
    }
    const handler = this.#handlers[m.op]
    if (m.rpc === 'notify') {
      handler?.(...m.args)
      return
    }
    Promise.resolve().then(() => {
      if (handler === undefined) throw new Error(`no handler for ${m.op}`)
      return handler(...m.args)
    }).then(
      (value) => { this.#port.postMessage({ rpc: 'return', id: m.id, value } satisfies Message) },
      (err: unknown) => { this.#port.postMessage({ rpc: 'throw', id: m.id, message: err instanceof Error ? err.message : String(err) } satisfies Message) }
    )
  }
}
