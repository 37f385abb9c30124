import type { Answer, ResultCache } from '../analytics/results.js'
import type { Window } from '../analytics/reports.js'
import { iso } from '../clock.js'
import { ApiError } from '../errors.js'
import { held, ok, type Result } from '../http/route.js'

const DAY = 86_400_000
/** How soon a client should ask again for an answer still being computed past REPORT_WAIT_MS. */
const RETRY_SECONDS = 1

type Ready<T> = Extract<Answer<T>, { state: 'ready' }>

/** How every computed route answers a question, for its OpenAPI description. */
export const COMPUTED = 'Computed by ClickHouse and reused for REPORT_CACHE_SECONDS (5 minutes): a query not asked before waits for ClickHouse and answers 200 (after REPORT_WAIT_MS, 10 s, it answers 202 with status pending and Retry-After instead: ask again); an expired answer is served with stale: true while it is recomputed.'

/** The window a report covers: start_date..end_date (UTC days, inclusive), else the last `days` days to now. */
export interface WindowQuery {
  days?: number
  start_date?: string
  end_date?: string
}

/** The window a query names, checked against the lookback limit (400 invalid_date beyond it). */
export function windowOf (q: WindowQuery, now: number, maxDays: number, defaultDays: number): { window: Window, key: string } {
  if (q.start_date === undefined) {
    if (q.end_date !== undefined) throw new ApiError('invalid_parameter', 'end_date needs start_date.', { param: 'start_date' })
    const days = q.days ?? defaultDays
    return { window: { from: now - days * DAY, to: now }, key: `days=${days}` }
  }
  const today = Math.floor(now / DAY) * DAY
  const start = Date.parse(`${q.start_date}T00:00:00Z`)
  const end = q.end_date !== undefined ? Date.parse(`${q.end_date}T00:00:00Z`) : today
  if (end < start) throw new ApiError('invalid_date', 'end_date is before start_date.', { param: 'end_date' })
  if (start < today - (maxDays - 1) * DAY) throw new ApiError('invalid_date', `start_date is more than ${maxDays} days back; the lookback is at most ${maxDays} days.`, { param: 'start_date' })
  if (start > today) throw new ApiError('invalid_date', 'start_date is in the future.', { param: 'start_date' })
  return { window: { from: start, to: Math.min(end + DAY - 1000, now) }, key: `${q.start_date}..${q.end_date ?? 'today'}` }
}

/**
 * A computed answer as HTTP, through render when ClickHouse has it: at once from the cache, else by holding the
 * response until the computation settles (REPORT_WAIT_MS at most, then 202 with status pending and Retry-After).
 * 503 when ClickHouse is unavailable.
 */
export function whenComputed<T> (cache: ResultCache, key: string, compute: () => Promise<T>, render: (a: Ready<T>) => Result): Result {
  const now = cache.get(key, compute)
  if (now.state !== 'pending') return settled(now, render)
  return held(cache.wait<T>(key).then((later) => settled(later, render)))
}

function settled<T> (a: Answer<T>, render: (a: Ready<T>) => Result): Result {
  if (a.state === 'ready') return render(a)
  if (a.state === 'pending') return ok({ status: 'pending', retry_after_seconds: RETRY_SECONDS }, 202, { 'Retry-After': String(RETRY_SECONDS) })
  throw new ApiError('service_unavailable', `Analytics is unavailable (${a.error}); retry shortly.`, { retry_after_seconds: 5 }, { 'Retry-After': '5' })
}

/**
 * A report as HTTP (whenComputed): 200 with the report, generated_at and stale. shape turns what was computed into
 * the answer, so that routes showing one computation differently share its cache entry.
 */
export function answer<T extends object, V extends object = T> (cache: ResultCache, key: string, compute: () => Promise<T>, shape: (data: T) => V = (data) => data as unknown as V): Result {
  return whenComputed(cache, key, compute, (a) => ok({ ...shape(a.data), generated_at: iso(a.computedAt), stale: a.stale }, 200, { 'X-Cache': a.stale ? 'stale' : 'fresh' }))
}
