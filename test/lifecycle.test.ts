import { mkdtempSync, rmSync } from 'node:fs'
import { connect } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { eventually } from './helpers/eventually.js'
import { startProcess, stopsCleanly } from './helpers/process.js'
import { parseResponses, rawExchange, startTestService } from './helpers/service.js'

// A service's life: a graceful shutdown, and plain writes that outlive a kill -9 (test/journal-crash.test.ts has the
// hot threads' journals under load).

t.test('graceful shutdown: stop accepting, finish in-flight requests, then close', async (t) => {
  const svc = await startTestService(t)
  const { key } = await svc.onboard('draining')
  const body = JSON.stringify({ label: 'in flight' })
  const head = `POST /openrtb/v2/keys HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n`
  // The request's first bytes, and the rest only once the service is draining: it closes with the request in flight.
  let draining!: () => void
  const drained = new Promise<void>((resolve) => { draining = resolve })
  const inFlight = rawExchange(svc.port, [head + body.slice(0, 4), drained, body.slice(4)], 30_000)
  t.ok(await eventually(t, 'the request in flight', () => svc.inFlight(), { until: (n) => n >= 2 }), 'the request is in flight')
  const closed = svc.service.close()
  // Each hot thread closes its listen socket when the supervisor's message reaches it.
  const connecting = () => new Promise((resolve) => {
    const socket = connect(svc.port, '127.0.0.1')
    socket.on('error', (e: NodeJS.ErrnoException) => resolve(e.code))
    socket.on('connect', () => { socket.destroy(); resolve('connected') })
  })
  t.equal(await eventually(t, 'new connections refused', connecting, { until: (r) => r === 'ECONNREFUSED', every: 10 }), 'ECONNREFUSED', 'new connections are refused')
  const keptAlive = await svc.request('GET', '/readyz')
  t.equal(keptAlive.status, 503, 'a kept-alive connection is told the service is draining')
  t.equal(keptAlive.body.error_code, 'service_unavailable')
  draining()
  const [reply] = parseResponses(await inFlight)
  t.equal(reply?.status, 201, 'the request in flight was finished')
  await closed
  t.ok(JSON.parse(reply!.body).data.key, 'and its answer is whole')
})

for (const durability of ['os', 'fsync']) {
t.test(`kill -9 during writes loses no acknowledged write (DURABILITY=${durability})`, async (t) => {
  const dataDir = mkdtempSync(join(tmpdir(), 'oohbid-crash-'))
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }))
  const first = await startProcess(dataDir, { DURABILITY: durability })
  const firstExit = new Promise((resolve) => first.child.once('exit', resolve))
  const acknowledged: string[] = []
  let n = 0
  let killed = false
  const worker = async () => {
    while (!killed) {
      const i = n++
      const seat = `crash_${i}`
      try {
        const res = await fetch(`${first.url}/openrtb/v2/onboard`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-forwarded-for': `203.0.${(i >> 8) & 255}.${i & 255}` },
          body: JSON.stringify({ company_name: 'Crash Co', seat_id: seat, contact_email: 'c@crash.example' })
        })
        const body = await res.json() as { success: boolean }
        if (res.status === 201 && body.success) acknowledged.push(seat)
      } catch {}
      if (acknowledged.length >= 150 && !killed) {
        killed = true
        first.child.kill('SIGKILL')
      }
    }
  }
  await Promise.all(Array.from({ length: 16 }, worker))
  await firstExit
  t.ok(acknowledged.length >= 150, `${acknowledged.length} writes acknowledged before the kill`)
  const second = await startProcess(dataDir, { DURABILITY: durability })
  t.teardown(() => { second.child.kill('SIGKILL') })
  const missing: string[] = []
  for (const seat of acknowledged) {
    const res = await fetch(`${second.url}/admin/v1/seats/${seat}`, { headers: { authorization: 'Bearer crash-admin' } })
    if (res.status !== 200) missing.push(seat)
  }
  t.same(missing, [], 'every acknowledged seat survived')
  await stopsCleanly(t, second)
})
}
