/**
 * Runs fn until it resolves, trying again everyMs after each failure, and rethrows the last failure once another
 * try would end past waitMs: how a node waits out an engine that is busy or electing its leader, as a write waits for
 * its quorum. onRetry sees each failure that is tried again.
 */
export async function retryFor<T> (fn: () => Promise<T>, waitMs: number, everyMs: number, onRetry?: (err: unknown) => void): Promise<T> {
  const deadline = Date.now() + waitMs
  for (;;) {
    try {
      return await fn()
    } catch (err) {
      if (Date.now() + everyMs >= deadline) throw err
      onRetry?.(err)
      await new Promise((resolve) => setTimeout(resolve, everyMs))
    }
  }
}

/**
 * Runs attempt until it resolves, or until stopped() says to give up (then undefined), waiting 0.5 s after the first
 * failure and twice as long after each next one, up to 30 s: how the analytics process waits out a ClickHouse or an
 * engine that is away without hammering it. onFailure sees each failure and the wait before the next try.
 */
export async function retryWithBackoff<T> (attempt: () => Promise<T>, stopped: () => boolean, onFailure: (err: unknown, retryInMs: number) => void): Promise<T | undefined> {
  let backoff = 500
  while (!stopped()) {
    try {
      return await attempt()
    } catch (err) {
      onFailure(err, backoff)
      await new Promise((resolve) => setTimeout(resolve, backoff))
      backoff = Math.min(30_000, backoff * 2)
    }
  }
  return undefined
}

/** Rejects past ms: an engine's read can wait without end (an object whose chunks are gone, a consumer that never opens). */
export async function within<T> (ms: number, what: string, work: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  try {
    return await Promise.race([work, new Promise<never>((_resolve, reject) => { timer = setTimeout(() => reject(new Error(`${what}: no answer in ${ms} ms`)), ms) })])
  } finally {
    clearTimeout(timer)
  }
}
