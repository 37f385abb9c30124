/** One end of a message channel between the supervisor and a hot thread: a Worker, or parentPort inside it. */
export interface Port {
  postMessage (message: unknown): void
  on (event: 'message', listener: (message: unknown) => void): unknown
}

/** One end's operations (src/hot/operations.ts): calls answer, notes do not. */
export interface Side {
  calls: object
  notes: object
}

type Fn = (...args: any[]) => unknown
export type Args<F> = F extends (...args: infer A) => unknown ? A : never
export type Answer<F> = F extends (...args: any[]) => infer R ? R : never

/** What one end runs for the other: each call's answer, or a promise of it; each note returns nothing. */
export type Handlers<S extends Side> =
  { [K in keyof S['calls']]: (...args: Args<S['calls'][K]>) => Answer<S['calls'][K]> | Promise<Answer<S['calls'][K]>> } &
  { [K in keyof S['notes']]: (...args: Args<S['notes'][K]>) => void }

type Message =
  | { rpc: 'call', id: number, op: string, args: unknown[] }
  | { rpc: 'return', id: number, value: unknown }
  | { rpc: 'throw', id: number, message: string }
  | { rpc: 'notify', op: string, args: unknown[] }

/**
 * Calls and notes over a thread's message port, typed by both ends' declarations: Local is what this end answers,
 * Remote what it may ask. A call settles with the other end's answer or its error's message; a note is one-way.
 * Calls still open when the other end dies are refused (closed), so a waiting request answers instead of hanging.
 */
export class Rpc<Local extends Side, Remote extends Side> {
  readonly #port: Port
  readonly #handlers: Record<string, Fn | undefined>
  readonly #open = new Map<number, { resolve: (v: unknown) => void, reject: (e: Error) => void }>()
  #next = 1

  /** before: runs ahead of every call and note handled (the store's refresh: the sender committed first). */
  constructor (port: Port, handlers: Handlers<Local>, before?: () => void) {
    this.#port = port
    this.#handlers = handlers as unknown as Record<string, Fn | undefined>
    port.on('message', (m) => {
      before?.()
      this.#receive(m as Message)
    })
  }

  call<K extends keyof Remote['calls'] & string> (op: K, ...args: Args<Remote['calls'][K]>): Promise<Answer<Remote['calls'][K]>> {
    const id = this.#next++
    return new Promise((resolve, reject) => {
      this.#open.set(id, { resolve: resolve as (v: unknown) => void, reject })
      this.#port.postMessage({ rpc: 'call', id, op, args } satisfies Message)
    })
  }

  notify<K extends keyof Remote['notes'] & string> (op: K, ...args: Args<Remote['notes'][K]>): void {
    this.#port.postMessage({ rpc: 'notify', op, args } satisfies Message)
  }

  /** Refuses every call still waiting: the other end is gone. */
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
