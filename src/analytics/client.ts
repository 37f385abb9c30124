import { spawn, type ChildProcess } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import type { Logger } from '../log.js'
import type { AnalyticsReply, AnalyticsRequest, ProcessConfig } from './protocol.js'
import type { Params } from './sql.js'

const ENTRY = fileURLToPath(new URL('./process.js', import.meta.url))
const QUERY_TIMEOUT_MS = 60_000
/**
 * The analytics process's name (argv[0]): what `ps` and `top` show for ClickHouse's process, and what
 * FAKETIME_SKIP_CMDS names to leave it on the real clock (README, Tests: chDB reads the real time whatever libfaketime
 * says, and slows to a crawl under it).
 */
const ANALYTICS_PROCESS_NAME = 'oohbid-analytics'

/** A request before it has its id (Omit distributed over the union). */
type Unsent = AnalyticsRequest extends infer R ? R extends AnalyticsRequest ? Omit<R, 'id'> : never : never

type Pending = { resolve: (rows: Array<Record<string, unknown>>) => void, reject: (err: Error) => void, timer: NodeJS.Timeout }

/** Why ClickHouse could not answer: not connected, a failed query, or a timeout. */
export class AnalyticsError extends Error {}

/**
 * The service's side of the analytics process: forks it, restarts it when it dies (after 1 s, doubling to 30 s while
 * it keeps dying), and sends it queries. Nothing here blocks a request: callers get promises, and routes answer
 * from what earlier queries left in the result cache.
 */
export class Analytics {
  readonly #config: ProcessConfig
  readonly #log: Logger
  readonly #pending = new Map<number, Pending>()
  #child: ChildProcess | undefined
  #nextId = 1
  #closing = false
  #restarts = 0
  #onReady: Array<() => void> = []
  /** The backend once connected ('chdb' or 'server'), else undefined. */
  backend: 'chdb' | 'server' | undefined
  /** Why ClickHouse is unavailable, while it is. */
  lastError: string | undefined
  /** Told how many events each shipped batch deleted from the funnel log. */
  onShipped: (count: number) => void = () => {}
  /** Told each time the process exited without being asked to and is to be started again (/metrics counts them). */
  onRestart: () => void = () => {}
  /** Told when the process (its pid) is about to open LMDB: hold the writers until it has (src/store/open-beside.ts). */
  onOpening: (pid: number) => void = () => {}
  /** Asked to delete the funnel log's records up to an event id, which the sink holds (the process reads LMDB only). */
  onDrop: (last: number) => Promise<void> = async () => {}

  constructor (config: ProcessConfig, log: Logger) {
    this.#config = config
    this.#log = log
  }

  /** The process id of the analytics process (tests kill it to show nothing is lost). */
  get pid (): number | undefined {
    return this.#child?.pid
  }

  start (): void {
    // fork() with a name of its own: the same node, flags and IPC channel.
    const child = spawn(process.execPath, [...process.execArgv, ENTRY], {
      argv0: ANALYTICS_PROCESS_NAME,
      env: { ...process.env, OOHBID_ANALYTICS_CONFIG: JSON.stringify(this.#config) },
      stdio: ['ignore', 'inherit', 'inherit', 'ipc']
    })
    this.#child = child
    child.on('message', (m: AnalyticsReply) => this.#receive(m))
    // A failed kill or IPC write; its exit, if it dies, is handled below.
    child.on('error', (err) => this.#log.warn('analytics process error', { error: err.message }))
    child.on('exit', (code, signal) => {
      this.backend = undefined
      for (const [id, p] of this.#pending) {
        clearTimeout(p.timer)
        p.reject(new AnalyticsError('the analytics process exited'))
        this.#pending.delete(id)
      }
      if (this.#closing) return
      const wait = Math.min(30_000, 1000 * 2 ** Math.min(this.#restarts++, 5))
      this.#log.warn('analytics process exited; restarting', { code, signal, restart_in_ms: wait })
      this.onRestart()
      setTimeout(() => { if (!this.#closing) this.start() }, wait).unref()
    })
  }

  #receive (m: AnalyticsReply): void {
    if (m.op === 'opening') {
      if (this.#child?.pid !== undefined) this.onOpening(this.#child.pid)
      return
    }
    if (m.op === 'drop') {
      const child = this.#child
      const answer = (error?: string) => {
        if (child?.connected === true) child.send({ op: 'dropped', id: m.id, ...(error !== undefined ? { error } : {}) } satisfies AnalyticsRequest, undefined, undefined, () => {})
      }
      this.onDrop(m.last).then(() => answer(), (err: unknown) => {
        const error = err instanceof Error ? err.message : String(err)
        this.#log.error('could not delete shipped funnel events', { error })
        answer(error)
      })
      return
    }
    if (m.op === 'ready') {
      this.backend = m.backend
      this.lastError = undefined
      this.#restarts = 0
      for (const f of this.#onReady.splice(0)) f()
      return
    }
    if (m.op === 'unavailable') {
      this.lastError = m.error
      return
    }
    if (m.op === 'shipped') {
      this.onShipped(m.count)
      return
    }
    const p = this.#pending.get(m.id)
    if (p === undefined) return
    this.#pending.delete(m.id)
    clearTimeout(p.timer)
    if (m.op === 'result') p.resolve(m.rows)
    else p.reject(new AnalyticsError(m.error))
  }

  /**
   * One request and its answer. While the analytics process is starting (or restarting after a crash) and has not
   * reported ClickHouse unavailable, the request waits for it within its own timeout: a report asked just after
   * start is answered, not refused.
   */
  async #request (message: Unsent, timeoutMs: number): Promise<Array<Record<string, unknown>>> {
    const until = Date.now() + timeoutMs
    if (this.backend === undefined && this.lastError === undefined && !this.#closing) {
      let timer: NodeJS.Timeout | undefined
      await Promise.race([this.ready(), new Promise((resolve) => { timer = setTimeout(resolve, timeoutMs) })])
      clearTimeout(timer)
    }
    return await this.#send(message, Math.max(1, until - Date.now()))
  }

  #send (message: Unsent, timeoutMs: number): Promise<Array<Record<string, unknown>>> {
    const child = this.#child
    if (child === undefined || !child.connected || this.backend === undefined) return Promise.reject(new AnalyticsError(this.lastError ?? 'the analytics process is not ready'))
    const id = this.#nextId++
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#pending.delete(id)
        reject(new AnalyticsError(`no answer from ClickHouse within ${timeoutMs} ms`))
      }, timeoutMs)
      this.#pending.set(id, { resolve, reject, timer })
      // With a callback, a write to a process that has just died is this request's failure; without one, Node emits
      // it as an 'error' event on the ChildProcess, which ended the service (bench/soak, test/analytics-process).
      child.send({ ...message, id } as AnalyticsRequest, undefined, undefined, (err) => {
        if (err === null || !this.#pending.delete(id)) return
        clearTimeout(timer)
        reject(new AnalyticsError(`the analytics process could not be reached: ${err.message}`))
      })
    })
  }

  /** Rows of a SELECT, its {name:Type} placeholders bound to params. */
  query (sql: string, params: Params = {}, timeoutMs = QUERY_TIMEOUT_MS): Promise<Array<Record<string, unknown>>> {
    return this.#request({ op: 'query', sql, params }, timeoutMs)
  }

  /** Resolves once connected (or at once when already). */
  ready (): Promise<void> {
    if (this.backend !== undefined) return Promise.resolve()
    return new Promise((resolve) => this.#onReady.push(resolve))
  }

  /**
   * Ships everything in the funnel log now and resolves when ClickHouse has it (tests, benchmarks); on a cluster node,
   * also everything the funnel stream holds from other nodes. If the analytics process dies meanwhile, waits for its
   * restart and asks again.
   */
  async drain (timeoutMs = 120_000): Promise<void> {
    const until = Date.now() + timeoutMs
    for (;;) {
      await this.ready()
      try {
        await this.#request({ op: 'drain' }, Math.max(1, until - Date.now()))
        return
      } catch (err) {
        if (Date.now() >= until || this.#closing) throw err
        await new Promise((resolve) => setTimeout(resolve, 50))
      }
    }
  }

  /** Events waiting in LMDB and shipped so far by this process. */
  async status (): Promise<{ pending: number, shipped: number, backend: string }> {
    const [row] = await this.#request({ op: 'status' }, 10_000)
    return row as { pending: number, shipped: number, backend: string }
  }

  /** Stops the analytics process; what it has not shipped waits in LMDB for the next start. */
  async close (): Promise<void> {
    this.#closing = true
    // A request still waiting for the process to be ready fails now, rather than holding the shutdown for its timeout.
    for (const f of this.#onReady.splice(0)) f()
    const child = this.#child
    if (child === undefined || child.exitCode !== null || child.signalCode !== null) return
    const exited = new Promise((resolve) => child.once('exit', resolve))
    child.kill('SIGTERM')
    const timer = setTimeout(() => child.kill('SIGKILL'), 10_000)
    await exited
    clearTimeout(timer)
  }
}
