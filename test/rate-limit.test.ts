import t from 'tap'
import { startTestService } from './helpers/service.js'

t.test('per-key windows: headers count down, the 101st is 429, the window resets on the injected clock', async (t) => {
  const svc = await startTestService(t)
  const { key } = await svc.onboard('limited')
  const first = await svc.request('GET', '/openrtb/v2/seat', { key })
  t.equal(first.headers.get('ratelimit-limit'), '100', 'sandbox column')
  t.equal(first.headers.get('ratelimit-remaining'), '99')
  t.equal(first.headers.get('ratelimit-reset'), '60')
  svc.clock.advance(20_000)
  let last = first
  for (let i = 2; i <= 100; i++) last = await svc.request('GET', '/openrtb/v2/seat', { key })
  t.equal(last.status, 200)
  t.equal(last.headers.get('ratelimit-remaining'), '0')
  t.equal(last.headers.get('ratelimit-reset'), '40', 'the window started at the first request')
  const limited = await svc.request('GET', '/openrtb/v2/seat', { key })
  t.equal(limited.status, 429)
  t.match(limited.body, { error_code: 'rate_limited', retry_after_seconds: 40 })
  t.notOk('retry_after' in limited.body, 'the integer retry_after belongs to onboarding only')
  t.equal(limited.headers.get('retry-after'), '40')
  t.equal(limited.headers.get('ratelimit-remaining'), '0')
  const other = await svc.onboard('unlimited')
  t.equal((await svc.request('GET', '/openrtb/v2/seat', { key: other.key })).status, 200, 'another key has its own window')
  svc.clock.advance(40_000)
  const reset = await svc.request('GET', '/openrtb/v2/seat', { key })
  t.equal(reset.status, 200)
  t.equal(reset.headers.get('ratelimit-remaining'), '99')
  const metrics = await svc.request('GET', '/metrics')
  t.match(metrics.text, /oohbid_rate_limit_rejections_total\{group="account"\} 1/)
})

t.test('approval moves a seat to production limits; operators set custom limits per group', async (t) => {
  const svc = await startTestService(t)
  const { key } = await svc.onboard('enterprise')
  const limits = async () => Object.fromEntries((await svc.request('GET', '/openrtb/v2/seat', { key })).body.data.rate_limits.map((l: { group: string, limit: number }) => [l.group, l.limit]))
  t.match(await limits(), { bidding: 100, inventory: 100, reporting: 100 })
  await svc.admin('POST', '/admin/v1/seats/enterprise/approve')
  t.match(await limits(), { bidding: 1000, inventory: 200, reporting: 100 })
  const set = await svc.admin('PUT', '/admin/v1/seats/enterprise/rate-limits', { limits: { bidding: 500000, account: 3 }, reason: 'enterprise contract' })
  t.equal(set.status, 200)
  t.same(set.body.data.rate_limits, { bidding: 500000, account: 3 })
  const view = (await svc.request('GET', '/openrtb/v2/seat', { key })).body.data.rate_limits
  t.match(view.find((l: { group: string }) => l.group === 'bidding'), { limit: 500000, custom: true })
  t.equal((await svc.request('GET', '/openrtb/v2/seat', { key })).status, 429, 'the custom account limit of 3 applies at once (this window already counted 3)')
  const cleared = await svc.admin('PUT', '/admin/v1/seats/enterprise/rate-limits', { limits: { account: null } })
  t.same(cleared.body.data.rate_limits, { bidding: 500000 })
  const bad = await svc.admin('PUT', '/admin/v1/seats/enterprise/rate-limits', { limits: { onboarding: 10 } })
  t.equal(bad.status, 400, 'only per-key groups can be customised')
  const zero = await svc.admin('PUT', '/admin/v1/seats/enterprise/rate-limits', { limits: { bidding: 0 } })
  t.equal(zero.status, 400)
})

t.test('every group of the Limits table: sandbox and production columns, windows on the injected clock', async (t) => {
  const { RateLimiter, RATE_GROUPS, limitFor } = await import('../src/http/rate-limit.js')
  const { ManualClock } = await import('../src/clock.js')
  const spec = {
    onboarding: [5, 5, 3600], bidding: [100, 1000, 60], inventory: [100, 200, 60], creatives: [100, 100, 60],
    campaigns: [100, 100, 60], deals: [100, 100, 60], reporting: [100, 100, 60]
  } as const
  const seat = (status: 'sandbox' | 'approved') => ({ key: {} as never, seat: { status, rate_limits: {} } as never })
  for (const [group, [sandbox, production, windowS]] of Object.entries(spec) as Array<[keyof typeof spec, readonly [number, number, number]]>) {
    if (group !== 'onboarding') {
      t.match(limitFor(group, seat('sandbox')), { limit: sandbox, windowMs: windowS * 1000 }, `${group} sandbox`)
      t.match(limitFor(group, seat('approved')), { limit: production, windowMs: windowS * 1000 }, `${group} production`)
    } else {
      t.match(limitFor(group, undefined), { limit: 5, windowMs: 3600_000 }, 'onboarding per address')
      t.equal(RATE_GROUPS.onboarding.per, 'ip')
    }
    const clock = new ManualClock()
    const limiter = new RateLimiter(clock)
    let allowed = 0
    for (let i = 0; i < production; i++) if (limiter.take(group, 'k', production, windowS * 1000).allowed) allowed++
    t.equal(allowed, production, `${group}: ${production} allowed in one window`)
    const refused = limiter.take(group, 'k', production, windowS * 1000)
    t.match(refused, { allowed: false, remaining: 0, resetSeconds: windowS }, `${group}: refused past the limit`)
    clock.advance(windowS * 1000 - 1)
    t.notOk(limiter.take(group, 'k', production, windowS * 1000).allowed, `${group}: still refused 1 ms before the reset`)
    clock.advance(1)
    t.ok(limiter.take(group, 'k', production, windowS * 1000).allowed, `${group}: a new window`)
  }
})

t.test('limiters over the same shared memory count into one window, as hot threads do', async (t) => {
  const { RateLimiter } = await import('../src/http/rate-limit.js')
  const { ManualClock } = await import('../src/clock.js')
  const clock = new ManualClock()
  const a = new RateLimiter(clock)
  const b = new RateLimiter(clock, a.buffer)
  for (let i = 0; i < 5; i++) (i % 2 === 0 ? a : b).take('bidding', 'key-1', 10, 60_000)
  t.match(b.take('bidding', 'key-1', 10, 60_000), { allowed: true, remaining: 4 }, 'the sixth request, whichever thread counts it, leaves 4')
  t.match(a.take('bidding', 'key-2', 10, 60_000), { allowed: true, remaining: 9 }, 'another key has its own window')
  for (let i = 0; i < 4; i++) a.take('bidding', 'key-1', 10, 60_000)
  t.match(b.take('bidding', 'key-1', 10, 60_000), { allowed: false, remaining: 0 })
  // 300,000 subjects, more than the table holds: old windows give way, the newest are still exact.
  for (let i = 0; i < 300_000; i++) a.take('public', `198.51.${i >> 8}.${i & 255}-${i}`, 1, 60_000)
  clock.advance(1)
  t.match(b.take('public', 'fresh-subject', 1, 60_000), { allowed: true }, 'a full table still takes a new subject')
  t.match(b.take('public', 'fresh-subject', 1, 60_000), { allowed: false }, 'and counts it exactly')
})

t.test('a cluster node\'s windows: the same start on every node, spent only as the engine grants, asked for ahead', async (t) => {
  const { RateLimiter, alignedStart, chunkFor, creditFor } = await import('../src/http/rate-limit.js')
  const { ManualClock } = await import('../src/clock.js')
  const clock = new ManualClock()
  const start = alignedStart('bidding\u0000key:k', 60_000, clock.now())
  t.equal(alignedStart('bidding\u0000key:k', 60_000, start + 59_999), start, 'one window for a minute from its start')
  t.equal(alignedStart('bidding\u0000key:k', 60_000, start + 60_000), start + 60_000, 'the next starts where it ends')
  t.not(alignedStart('bidding\u0000key:other', 60_000, clock.now()) % 60_000, start % 60_000, 'another key resets at another second')
  t.same([creditFor(1000), creditFor(99), chunkFor(1000, 0), chunkFor(1000, 2), chunkFor(1000, 9)], [10, 0, 10, 40, 100], 'credit 1% (none under 100); grants from 1% doubling to 10%')

  const node = new RateLimiter(clock, undefined, { leased: true })
  const opening = Array.from({ length: 4 }, () => node.take('bidding', 'key:k', 1000, 60_000))
  t.match(opening[0], { allowed: true, remaining: 999 }, 'the credit lets the first request through at once')
  t.ok(opening.every((d) => d.allowed && d.ask === undefined), 'and the first four ask the engine for nothing: a subject that makes fewer than half the credit a window never does')
  const first = node.take('bidding', 'key:k', 1000, 60_000)
  t.match(first.ask, { group: 'bidding', subject: 'key:k', start, windowMs: 60_000, limit: 1000, grants: 0 }, 'half the credit spent: the fifth asks the engine for a part of the window')
  for (let i = 5; i < 10; i++) t.equal(node.take('bidding', 'key:k', 1000, 60_000).ask, undefined, 'one ask at a time')
  t.match(node.take('bidding', 'key:k', 1000, 60_000), { allowed: false, wait: true }, 'past the credit with no grant yet: waits for it, rather than refuse under the limit')
  node.granted(first.ask!, { granted: 10, total: 510, spent: false })
  const after = node.take('bidding', 'key:k', 1000, 60_000)
  t.match(after, { allowed: true, remaining: 1000 - 500 - 11 }, 'what other nodes hold counts as spent in RateLimit-Remaining')
  t.match(after.ask, { grants: 1 }, 'half a grant left: the next ask goes out')
  node.granted(after.ask!, { granted: 5, total: 1000, spent: true })
  let allowed = 0
  for (let i = 0; i < 20; i++) if (node.take('bidding', 'key:k', 1000, 60_000).allowed) allowed++
  t.equal(allowed, 10 + 10 + 5 - 11, 'exactly the credit and the grants (11 of them spent already), then refused')
  const spent = node.take('bidding', 'key:k', 1000, 60_000)
  t.match(spent, { allowed: false, remaining: 0 })
  t.equal(spent.ask, undefined, 'a spent window asks no more')
  const raised = node.take('bidding', 'key:k', 5000, 60_000)
  t.match(raised, { allowed: false, wait: true }, 'the seat\'s limit raised within the window: spent under the old limit, not under the new, so it waits for a grant rather than refuse')
  t.match(raised.ask, { limit: 5000 }, 'and asks the engine for a part under the new limit')
  clock.advance(start + 60_000 - clock.now())
  t.match(node.take('bidding', 'key:k', 1000, 60_000), { allowed: true, remaining: 999 }, 'the next window starts fresh')

  // The engine slow to answer: the node granted itself 10; the engine's late answer of 15 adds only the 5 beyond.
  for (let i = 0; i < 4; i++) node.take('bidding', 'key:slow', 1000, 60_000)
  const slow = node.take('bidding', 'key:slow', 1000, 60_000)
  t.match(slow.ask, { known: 0 })
  node.granted(slow.ask!, { granted: 10, total: 0, spent: false })
  node.granted(slow.ask!, { granted: 15, total: 400, spent: false, beyond: 10 })
  let slowAllowed = 5
  for (let i = 0; i < 40; i++) if (node.take('bidding', 'key:slow', 1000, 60_000).allowed) slowAllowed++
  t.equal(slowAllowed, 10 + 15, 'the credit and the larger of the two grants, not both')

  const small = node.take('onboarding', 'ip:198.51.100.7', 5, 3_600_000)
  t.match(small, { allowed: false, wait: true }, 'a limit under 100 has no credit: its first request waits for the grant')
  node.granted(small.ask!, { granted: 1, total: 1, spent: false })
  const passed = node.take('onboarding', 'ip:198.51.100.7', 5, 3_600_000)
  t.match(passed, { allowed: true }, 'and passes once it arrives')
  t.ok(passed.ask, 'asking for the next part at once')
  node.granted({ ...passed.ask!, start: passed.ask!.start - 3_600_000 }, { granted: 50, total: 50, spent: false })
  t.match(node.take('onboarding', 'ip:198.51.100.7', 5, 3_600_000), { allowed: false, wait: true }, 'a grant for a window that ended is not spent in this one')
})
