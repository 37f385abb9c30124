import { readFileSync } from 'node:fs'
import t from 'tap'
import { eventually } from './helpers/eventually.js'
import { AnalyticsError } from '../src/analytics/client.js'
import { startTestService } from './helpers/service.js'

// The analytics process can die at any moment (issue 25: bench/soak's kill -9 took the whole service with it once).
// A query sent on the IPC channel of a process that has just died fails to write; without a callback, Node reports
// that as an 'error' event on the ChildProcess, and nothing listened: the service's main process died of it.

t.test('a query sent to an analytics process that has just died is refused; the service serves on and restarts it', async (t) => {
  const svc = await startTestService(t)
  const analytics = svc.service.analytics
  await analytics.ready()
  t.same(await analytics.query('SELECT 1 AS one'), [{ one: 1 }])
  const pid = analytics.pid!
  t.match(readFileSync(`/proc/${pid}/cmdline`, 'utf8'), /^oohbid-analytics\0/, 'ps names the process oohbid-analytics')
  process.kill(pid, 'SIGKILL')
  // Block until it is surely gone, so the channel's other end is closed before this process hears of the exit.
  for (const until = Date.now() + 300; Date.now() < until;);
  const late = await analytics.query('SELECT 1 AS one').then(() => 'answered', (err: unknown) => err)
  t.type(late, AnalyticsError, 'refused with an AnalyticsError')
  // The service has heard of the exit by now, and is restarting the process.
  await eventually(t, 'the restart counted', async () => (await svc.request('GET', '/metrics')).text, { until: (m) => /^oohbid_analytics_restarts_total 1$/m.test(m) })
  t.equal((await svc.request('GET', '/healthz')).status, 200, 'the service serves on')
  await analytics.ready()
  t.not(analytics.pid, pid, 'a new analytics process')
  t.same(await analytics.query('SELECT 1 AS one'), [{ one: 1 }], 'which answers')
  t.match((await svc.request('GET', '/metrics')).text, /^oohbid_analytics_restarts_total 1$/m, 'one restart counted')
})
