import { cpuMicros } from './cpu.js'

async function shippedAndPending (url: string): Promise<{ shipped: number, pending: number }> {
  const text = await fetch(`${url}/metrics`).then((r) => r.text())
  const value = (name: string) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1] ?? NaN)
  return { shipped: value('oohbid_funnel_shipped_events_total'), pending: value('oohbid_funnel_pending_events') }
}

/**
 * Waits until the analytics process of the service at url has shipped every funnel event waiting when called (at
 * most 120 s): a measured run that starts with a backlog (a fleet's registration, the bids stored before it, the run
 * before) would count shipping it as its own CPU. Events made meanwhile (the demo market's) may wait.
 */
export async function analyticsDrained (url: string): Promise<void> {
  const start = await shippedAndPending(url)
  for (const until = Date.now() + 120_000; Date.now() < until;) {
    if ((await shippedAndPending(url)).shipped >= start.shipped + start.pending) return
    await new Promise((resolve) => setTimeout(resolve, 250))
  }
}

/**
 * The analytics process's CPU per funnel event it ships (the figure issue 27 bounds at 8 us), over a measured run of
 * the service at url (pid: its main process; the analytics process is its child). Call before the run; the returned
 * function, called after it, waits until the events made meanwhile are shipped (at most 60 s) and answers
 * microseconds per event, or undefined without /proc.
 */
export async function analyticsMeter (url: string, pid: number): Promise<() => Promise<{ usPerEvent: number | undefined, events: number }>> {
  const start = await shippedAndPending(url)
  const cpuBefore = cpuMicros(pid, 'analytics')
  return async () => {
    // Everything waiting when the run ended, what it made included, is shipped by then.
    const end = await shippedAndPending(url)
    let now = end
    for (const until = Date.now() + 60_000; now.shipped < end.shipped + end.pending && Date.now() < until;) {
      await new Promise((resolve) => setTimeout(resolve, 250))
      now = await shippedAndPending(url)
    }
    const cpuAfter = cpuMicros(pid, 'analytics')
    const events = now.shipped - start.shipped
    return { usPerEvent: cpuBefore !== undefined && cpuAfter !== undefined && events > 0 ? (cpuAfter - cpuBefore) / events : undefined, events }
  }
}
