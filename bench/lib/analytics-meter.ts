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

/** What the analytics process spent on a measured run's events. */
export interface AnalyticsCost {
  /** All its CPU from the run's start until the run's events were shipped, per event shipped meanwhile. */
  usPerEvent: number | undefined
  /**
   * The same less what the process spends with nothing to ship (ClickHouse's background threads, the shipper's
   * polls), at the rate measured for 5 s before the run, over the same time: the CPU the events themselves cost.
   */
  netUsPerEvent: number | undefined
  /** That idle rate, microseconds of CPU per second. */
  idleUsPerSecond: number | undefined
  events: number
}

/**
 * The analytics process's CPU per funnel event it ships (the figure issue 27 bounds at 8 us), over a measured run of
 * the service at url (pid: its main process; the analytics process is its child). Call before the run: it first
 * measures the process idle for 5 s. The returned function, called after the run, waits until the events made
 * meanwhile are shipped (at most 60 s; the shipper sends a partial batch once its oldest event has waited 30 s) and
 * answers the cost, undefined figures without /proc.
 */
export async function analyticsMeter (url: string, pid: number): Promise<() => Promise<AnalyticsCost>> {
  const idleFrom = cpuMicros(pid, 'analytics')
  const idleStarted = performance.now()
  await new Promise((resolve) => setTimeout(resolve, 5000))
  const idleTo = cpuMicros(pid, 'analytics')
  const idleUsPerSecond = idleFrom !== undefined && idleTo !== undefined ? (idleTo - idleFrom) / ((performance.now() - idleStarted) / 1000) : undefined
  const start = await shippedAndPending(url)
  const cpuBefore = cpuMicros(pid, 'analytics')
  const started = performance.now()
  return async () => {
    // Everything waiting when the run ended, what it made included, is shipped by then.
    const end = await shippedAndPending(url)
    let now = end
    for (const until = Date.now() + 60_000; now.shipped < end.shipped + end.pending && Date.now() < until;) {
      await new Promise((resolve) => setTimeout(resolve, 250))
      now = await shippedAndPending(url)
    }
    const cpuAfter = cpuMicros(pid, 'analytics')
    const seconds = (performance.now() - started) / 1000
    const events = now.shipped - start.shipped
    const spent = cpuBefore !== undefined && cpuAfter !== undefined && events > 0 ? cpuAfter - cpuBefore : undefined
    return {
      usPerEvent: spent !== undefined ? spent / events : undefined,
      netUsPerEvent: spent !== undefined && idleUsPerSecond !== undefined ? (spent - idleUsPerSecond * seconds) / events : undefined,
      idleUsPerSecond,
      events
    }
  }
}
