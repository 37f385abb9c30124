// A Jepsen-style history (issue 47): every operation a client invoked, through which node, and what it was told. An
// operation's outcome is what the client can know, not what the service did: `ok` it was acknowledged, `fail` it was
// definitely refused (the service said it did nothing), `unknown` it may or may not have happened (no answer, a
// timeout, a 5xx). The invariants (checker.ts) hold the service to every `ok`, never to an `unknown`.

export type Outcome = 'ok' | 'fail' | 'unknown'

export interface Op<A = unknown> {
  /** The order of invocation, from 1. */
  index: number
  /** The logical client (a worker of the test), which issues one operation at a time. */
  client: string
  /** The node the client sent it to. */
  node: string
  /** What it asks, by name ('reserve', 'read'...), and with what. */
  f: string
  args: A
  /** Milliseconds since the history began, at invocation and at completion (undefined while in flight). */
  invokedAt: number
  completedAt?: number
  outcome?: Outcome
  /** The HTTP answer, where one came. */
  status?: number
  body?: unknown
  /** Why there was no answer (a connection reset, a timeout). */
  error?: string
}

/** An HTTP answer as the tests' callers return it. */
export interface Answer { status: number, body: unknown }

/**
 * Where an answer puts an operation: 2xx acknowledged; 4xx refused (the request was judged and not done: 409
 * capacity_unavailable, 400, 429); 5xx unknown (a 503 may come after the write reached the engine but before its
 * acknowledgement did), and so is 409 idempotency_key_in_use: another request with the key is still running, which
 * says nothing of whether it will be done (a retry whose first try landed and is still running gets it).
 */
export function outcomeOf (answer: Answer): Outcome {
  if (answer.status >= 200 && answer.status < 300) return 'ok'
  if (answer.status === 409 && (answer.body as { error_code?: string } | undefined)?.error_code === 'idempotency_key_in_use') return 'unknown'
  if (answer.status >= 400 && answer.status < 500) return 'fail'
  return 'unknown'
}

export class History {
  readonly ops: Op[] = []
  readonly #start = performance.now()
  /** Fault events (pause, wake, cut, heal) on the same time line as the operations. */
  readonly events: Array<{ at: number, what: string }> = []

  now (): number {
    return performance.now() - this.#start
  }

  note (what: string): void {
    this.events.push({ at: this.now(), what })
  }

  /**
   * Runs one operation and records it: its answer classified by outcomeOf, or unknown when send threw (no answer).
   * Answers the HTTP answer, or undefined when there was none.
   */
  async run<A> (client: string, node: string, f: string, args: A, send: () => Promise<Answer>): Promise<Answer | undefined> {
    const op: Op<A> = { index: this.ops.length + 1, client, node, f, args, invokedAt: this.now() }
    this.ops.push(op)
    try {
      const answer = await send()
      Object.assign(op, { completedAt: this.now(), outcome: outcomeOf(answer), status: answer.status, body: answer.body })
      return answer
    } catch (err) {
      Object.assign(op, { completedAt: this.now(), outcome: 'unknown', error: err instanceof Error ? err.message : String(err) })
      return undefined
    }
  }

  /** Operations in flight at a moment of the history (invoked, not yet answered). */
  inFlightAt (at: number, node?: string): Op[] {
    return this.ops.filter((o) => o.invokedAt <= at && (o.completedAt === undefined || o.completedAt > at) && (node === undefined || o.node === node))
  }

  /** Operations of a kind, of an outcome. */
  select<A = unknown> (f: string, outcome?: Outcome): Array<Op<A>> {
    return this.ops.filter((o) => o.f === f && (outcome === undefined || o.outcome === outcome)) as Array<Op<A>>
  }

  /** Counts by operation, node and outcome, one line each: `reserve node-1 ok 12`. */
  tally (): string[] {
    const counts = new Map<string, number>()
    for (const o of this.ops) {
      const k = `${o.f} ${o.node} ${o.outcome ?? 'in-flight'}`
      counts.set(k, (counts.get(k) ?? 0) + 1)
    }
    return [...counts].sort(([a], [b]) => a.localeCompare(b)).map(([k, n]) => `${k} ${n}`)
  }
}
