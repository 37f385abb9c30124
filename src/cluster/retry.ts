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
