import { ApiError } from '../errors.js'
import type { Store } from '../store/store.js'
import type { Idempotency } from './idempotency.js'
import { renderResult, type Written } from './render.js'
import { isMutating, type Ctx, type Result, type RouteDef } from './route.js'

/** Thrown inside a dry run's transaction to roll it back while keeping the handler's answer. */
class Rollback {
  constructor (readonly result: Result) {}
}

/** One run of a route's handler: the request as admitted and parsed, and what its Idempotency-Key records. */
export interface Execution {
  store: Store
  idempotency: Idempotency
  route: RouteDef
  ctx: Ctx
  /** The Idempotency-Key's claim, and the request's fingerprint under it. */
  claim: string | undefined
  fingerprint: string
  warnings: string[]
  /** The route's error envelope, for a refusal stored as the key's outcome. */
  errorBody: (err: ApiError) => string
}

/** Stores an answer as the outcome of the request's Idempotency-Key; call inside Store.write. */
export function saveOutcome (e: Execution, claim: string, result: Written): void {
  const { body, contentType, status } = renderResult(result, e.ctx.dryRun, e.warnings)
  e.idempotency.save(claim, e.fingerprint, status, body.toString(), { 'content-type': contentType, ...result.headers })
}

/**
 * Runs a mutating route's handler as a dry run whose transaction is always rolled back: what it would do, learnt
 * without doing it (a booking route's rehearsal on a cluster node). A held answer (an agent's tool call) is awaited:
 * its own transactions are dry runs too. Rejects with what the handler throws; its warnings are not the answer's.
 */
export async function rehearse (e: Execution): Promise<void> {
  const { route, store } = e
  const ctx: Ctx = { ...e.ctx, dryRun: true, warn: () => {} }
  if (route.prepare !== undefined) ctx.prepared = route.prepare(ctx)
  let result: Result
  try {
    result = store.write(() => {
      throw new Rollback(route.handler(ctx))
    })
  } catch (err) {
    if (!(err instanceof Rollback)) throw err
    result = err.result
  }
  if (result.kind === 'held') await result.answer
}

/**
 * Runs the handler: a mutating route inside a write transaction, with its key's outcome committed with its writes,
 * and a dry run rolled back while its answer is kept; a journaled route outside one (its journal makes it durable).
 */
export function execute (e: Execution): Result {
  const { route, ctx, store, claim } = e
  // What this thread committed since the last answer (a turn of the hot journal, after its bids were answered) is
  // no request's to wait for: this one waits only for what its own handler records.
  store.changes?.takeCommitted()
  if (route.prepare !== undefined) ctx.prepared = route.prepare(ctx)
  if (!isMutating(ctx.method) || (route.journaled === true && claim === undefined && !ctx.dryRun)) return route.handler(ctx)
  try {
    return store.write(() => {
      const result = route.handler(ctx)
      if (ctx.dryRun) throw new Rollback(result)
      // A held answer is recorded once it settles (RequestCycle.#hold), in a transaction of its own.
      // An answer that counts only once a log accepts it (Result's counts) is kept once it does (RequestCycle).
      if (claim !== undefined && result.kind !== 'held' && result.counts === undefined) saveOutcome(e, claim, result)
      return result
    })
  } catch (err) {
    if (err instanceof Rollback) return err.result
    // A handler's own 4xx is part of the key's outcome and is replayed too; 5xx, and an error that says when to
    // retry (429, 409 spot_in_progress), may be retried.
    if (claim !== undefined && err instanceof ApiError && err.status < 500 && err.extras.retry_after_seconds === undefined) {
      const body = e.errorBody(err)
      store.write(() => e.idempotency.save(claim, e.fingerprint, err.status, body, { 'content-type': 'application/json', ...err.headers }))
    }
    throw err
  }
}
