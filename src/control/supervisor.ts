import { Worker } from 'node:worker_threads'
import type { Logger } from '../log.js'
import type { HotThreadData, SupervisorSide, ThreadCalls, ThreadSide } from '../hot/operations.js'
import { Rpc, type Answer, type Args, type Handlers, type Port } from '../hot/rpc.js'

/** A thread that died this soon after starting is not restarted at once again: it would only die again. */
const RESTART_BACKOFF_MS = [0, 100, 1000, 5000]

interface Running {
  worker: Worker
  rpc: Rpc<SupervisorSide, ThreadSide>
  listening: boolean
}

/** What the supervisor answers its threads, less `listening`, which it answers itself. */
export type SupervisorHandlers = Omit<Handlers<SupervisorSide>, 'listening'>

/**
 * Starts HOT_THREADS hot threads and keeps them running: a thread that dies (an error nothing caught, memory) is
 * logged and replaced, its port share taken over by the others meanwhile. The supervisor answers what the threads
 * ask of it (handlers: ClickHouse queries, moderation, wake-ups, logs) and asks things of them (call).
 */
export class Supervisor {
  readonly #threads: Array<Running | undefined> = []
  readonly #data: Omit<HotThreadData, 'thread'>
  readonly #handlers: SupervisorHandlers
  readonly #log: Logger
  readonly #refresh: () => void
  #closing = false

  /** refresh: the supervisor's store.refresh, run before each message: what a thread tells of, it committed first. */
  constructor (data: Omit<HotThreadData, 'thread'>, handlers: SupervisorHandlers, log: Logger, refresh: () => void) {
    this.#data = data
    this.#handlers = handlers
    this.#log = log
    this.#refresh = refresh
  }

  /** Starts the threads; resolves once every one listens, or rejects with the first that failed to. */
  async start (count: number): Promise<void> {
    await Promise.all(Array.from({ length: count }, (_, i) => this.#spawn(i + 1, 0)))
  }

  #spawn (thread: number, restarts: number): Promise<void> {
    const worker = new Worker(new URL('../hot/thread.js', import.meta.url), { workerData: { ...this.#data, thread } satisfies HotThreadData })
    return new Promise((resolve, reject) => {
      const rpc = new Rpc<SupervisorSide, ThreadSide>(worker as unknown as Port, {
        ...this.#handlers,
        listening: () => {
          running.listening = true
          resolve()
        }
      }, this.#refresh)
      const running: Running = { worker, rpc, listening: false }
      const startedAt = Date.now()
      this.#threads[thread - 1] = running
      worker.on('error', (err) => {
        this.#log.error('hot thread failed', { thread, error: err instanceof Error ? err.stack ?? err.message : String(err) })
        if (!running.listening) reject(err)
      })
      worker.on('exit', (code) => {
        rpc.closed(`hot thread ${thread} exited`)
        if (this.#threads[thread - 1] === running) this.#threads[thread - 1] = undefined
        if (!running.listening) {
          reject(new Error(`hot thread ${thread} exited with code ${code} before listening`))
          return
        }
        if (this.#closing) return
        const quick = Date.now() - startedAt < 10_000
        const next = quick ? restarts + 1 : 0
        const delay = RESTART_BACKOFF_MS[Math.min(next, RESTART_BACKOFF_MS.length - 1)]!
        this.#log.error('hot thread stopped; restarting it', { thread, code, in_ms: delay })
        setTimeout(() => {
          if (this.#closing) return
          this.#spawn(thread, next).catch((err: unknown) => this.#log.error('hot thread did not restart', { thread, error: String(err) }))
        }, delay).unref()
      })
    })
  }

  /** Asks every running thread the same thing; the answers in thread order (a thread restarting is left out). */
  async call<K extends keyof ThreadCalls> (op: K, ...args: Args<ThreadCalls[K]>): Promise<Array<Answer<ThreadCalls[K]>>> {
    const live = this.#threads.filter((t): t is Running => t !== undefined)
    const answers = await Promise.allSettled(live.map((t) => t.rpc.call(op, ...args)))
    return answers.flatMap((a) => a.status === 'fulfilled' ? [a.value] : [])
  }

  /** Tells every running thread something, without waiting. */
  notify<K extends keyof ThreadSide['notes']> (op: K, ...args: Args<ThreadSide['notes'][K]>): void {
    for (const t of this.#threads) t?.rpc.notify(op, ...args)
  }

  /**
   * Ends a listening hot thread at once, as a crash does (its sockets closed, no drain; worker.terminate() would abort
   * the process while uWS holds them), after a short wait so that the answer to the operator who asked is written
   * first, even by the thread being ended. Its exit restarts it. False when that thread is not listening (restarting).
   */
  end (thread: number): boolean {
    const running = this.#threads[thread - 1]
    if (running?.listening !== true) return false
    setTimeout(() => running.rpc.notify('end'), 50).unref()
    return true
  }

  /** The workers of the threads listening now (tests end one to see it replaced). */
  get workers (): Worker[] {
    return this.#threads.filter((t): t is Running => t?.listening === true).map((t) => t.worker)
  }

  /**
   * Drains the threads in step: all stop accepting, then all finish their requests in flight (a kept-alive
   * connection on a thread with nothing in flight is still answered 503 meanwhile), then all close. Resolves with the
   * requests abandoned at the grace's end.
   */
  async close (): Promise<number> {
    this.#closing = true
    await this.call('stopAccepting')
    const abandoned = await this.call('finish')
    await this.call('close')
    await Promise.all(this.#threads.map((t) => t?.worker.terminate()))
    return abandoned.reduce((a, b) => a + b, 0)
  }
}
