import t from 'tap'
import { ResultCache, type Outcome } from './results.js'
import { ManualClock } from '../clock.js'
import { createLogger } from '../log.js'

// Two hot threads' report caches, wired as the threads wire them: what one computes or fails to, the other knows.
function pair () {
  const clock = new ManualClock(Date.UTC(2026, 10, 24))
  const log = createLogger('error', () => {})
  const caches: ResultCache[] = []
  const share = (from: number) => (key: string, outcome: Outcome) => caches[1 - from]!.received(key, outcome)
  caches.push(new ResultCache(clock, log, 300_000, 1000, share(0)), new ResultCache(clock, log, 300_000, 1000, share(1)))
  return { clock, a: caches[0]!, b: caches[1]! }
}

t.test('an answer computed by one thread is served by the other without asking ClickHouse', async (t) => {
  const { a, b } = pair()
  t.same(a.get('q', async () => 42), { state: 'pending' })
  await a.settled()
  let asked = 0
  t.match(b.get('q', async () => { asked++; return 0 }), { state: 'ready', data: 42, stale: false })
  t.equal(asked, 0)
})

t.test('a failure in one thread is unavailable in the other too, until the hold-off passes', async (t) => {
  const { clock, a, b } = pair()
  a.get('q', async () => { throw new Error('ClickHouse is down') })
  await a.settled()
  let asked = 0
  const ask = async () => { asked++; return 7 }
  t.same(b.get('q', ask), { state: 'failed', error: 'ClickHouse is down' }, 'the other thread answers unavailable at once')
  t.equal(asked, 0, 'and does not ask a ClickHouse known to be down')
  clock.advance(5_000)
  t.same(b.get('q', ask), { state: 'pending' }, 'past the hold-off it asks again')
  await b.settled()
  t.equal(asked, 1)
  t.match(a.get('q', ask), { state: 'ready', data: 7 }, 'and the answer reaches the first thread')
})
