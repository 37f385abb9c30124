import { request } from 'node:http'
import t from 'tap'
import { eventually } from './helpers/eventually.js'
import { startTestService, type TestService } from './helpers/service.js'

// HOT_THREADS=2: two uWS apps on one port. Each request here opens its own connection, so the kernel (SO_REUSEPORT)
// spreads them over both threads, as it spreads a real client population.

/** One request on a connection of its own; resolves with the status. */
function once (svc: TestService, method: string, path: string, key?: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port: svc.port, method, path, agent: false, headers: key !== undefined ? { authorization: `Bearer ${key}` } : {} }, (res) => {
      res.resume()
      res.on('end', () => resolve(res.statusCode!))
    })
    req.on('error', reject)
    req.end()
  })
}

/** Requests each hot thread has answered, from /metrics. */
async function perThread (svc: TestService): Promise<Record<string, number>> {
  const text = (await svc.request('GET', '/metrics')).text
  return Object.fromEntries([...text.matchAll(/^oohbid_hot_thread_requests_total\{thread="(\d+)"\} (\d+)$/gm)].map((m) => [m[1]!, Number(m[2])]))
}

t.test('both threads serve, and a key\'s rate limit is one window across them', async (t) => {
  const svc = await startTestService(t, { HOT_THREADS: '2' })
  const { key } = await svc.onboard('threads_rate')
  const statuses: number[] = []
  for (let i = 0; i < 110; i++) statuses.push(await once(svc, 'GET', '/openrtb/v2/seat', key))
  t.equal(statuses.filter((s) => s === 200).length, 100, 'exactly the account group\'s 100 a minute, wherever they landed')
  t.equal(statuses.filter((s) => s === 429).length, 10)
  const served = await perThread(svc)
  t.same(Object.keys(served).sort(), ['1', '2'], 'two hot threads')
  t.ok(Object.values(served).every((n) => n > 0), `each thread answered some (${JSON.stringify(served)})`)
  t.match((await svc.request('GET', '/metrics')).text, /^oohbid_http_requests_total\{method="GET",route="\/openrtb\/v2\/seat",status="200"\} 100$/m, 'the totals add every thread\'s')
})

t.test('a key revoked through one thread is refused by every thread at once', async (t) => {
  const svc = await startTestService(t, { HOT_THREADS: '2' })
  const { key } = await svc.onboard('threads_revoke')
  const minted = await svc.request('POST', '/openrtb/v2/keys', { key, body: { label: 'to revoke' } })
  const other = minted.body.data.key as string
  // Both threads resolve (and cache) the key first.
  for (let i = 0; i < 10; i++) t.equal(await once(svc, 'GET', '/openrtb/v2/seat', other), 200)
  t.equal((await svc.request('DELETE', `/openrtb/v2/keys/${minted.body.data.key_id}`, { key })).status, 200)
  const after: number[] = []
  for (let i = 0; i < 10; i++) after.push(await once(svc, 'GET', '/openrtb/v2/seat', other))
  t.same(after, Array(10).fill(401), 'no thread answers from its cached principal')
})

t.test('a hot thread that dies of an error nothing caught is replaced; the other serves meanwhile', async (t) => {
  const svc = await startTestService(t, { HOT_THREADS: '2' })
  const [first] = svc.service.threads.workers
  const exited = new Promise((resolve) => first!.once('exit', resolve))
  // A malformed message makes its handler throw outside any request, as a bug in a timer or handler would.
  first!.postMessage({ rpc: 'notify', op: 'analytics', args: [null] })
  t.equal(await exited, 1, 'the thread ended')
  const during: number[] = []
  for (let i = 0; i < 20; i++) during.push(await once(svc, 'GET', '/healthz'))
  t.same(during, Array(20).fill(200), 'every request answered while one thread was down')
  // A new thread starts in about half a second here, several on a loaded CI machine.
  t.equal(await eventually(t, 'a second hot thread again', () => svc.service.threads.workers.length, { within: 60_000, until: (n) => n === 2 }), 2, 'the thread was restarted')
  t.ok(svc.logs.some((l) => /hot thread fatal error/.test(l) && /TypeError/.test(l)), 'with the error logged')
  t.ok(svc.logs.some((l) => /hot thread stopped; restarting it/.test(l)), 'and the restart')
  for (let i = 0; i < 60; i++) await once(svc, 'GET', '/healthz')
  const served = await perThread(svc)
  t.ok(Object.keys(served).length === 2 && Object.values(served).every((n) => n > 0), `the new thread serves its share (${JSON.stringify(served)})`)
})

t.test('the operator ends a hot thread through the API: answered first, audited, replaced; bad numbers refused', async (t) => {
  const svc = await startTestService(t, { HOT_THREADS: '2' })
  const exits = svc.service.threads.workers.map((w) => new Promise<number>((resolve) => w.once('exit', resolve)))
  const dry = await svc.admin('POST', '/admin/v1/hot-threads/2/end?dry_run=true')
  t.match(dry, { status: 200, body: { dry_run: true, data: { thread: 2 } } })
  for (const [path, status, code] of [['/admin/v1/hot-threads/0/end', 400, 'invalid_parameter'], ['/admin/v1/hot-threads/3/end', 400, 'invalid_parameter'], ['/admin/v1/hot-threads/one/end', 400, 'invalid_parameter']] as const) {
    t.match(await svc.admin('POST', path), { status, body: { error_code: code, param: 'thread' } }, `${path}: ${status} ${code}`)
  }
  t.equal(svc.service.threads.workers.length, 2, 'nothing was ended by a dry run or a refusal')
  const ended = await svc.admin('POST', '/admin/v1/hot-threads/2/end')
  t.match(ended, { status: 200, body: { success: true, data: { thread: 2, ended_at: /Z$/ } } }, 'the answer arrives, whichever thread wrote it')
  let code: number | undefined
  void exits[1]!.then((c) => { code = c })
  t.equal(await eventually(t, 'thread 2 exited', () => code), 1, 'thread 2 ended')
  t.equal(await eventually(t, 'a second hot thread again', () => svc.service.threads.workers.length, { within: 60_000, until: (n) => n === 2 }), 2, 'and was restarted')
  const audit = (await svc.admin('GET', '/admin/v1/audit')).body.data
  t.ok(JSON.stringify(audit).includes('audit.hot_thread.ended'), 'audited')
  t.equal((await once(svc, 'GET', '/healthz')), 200, 'serving')
})
