import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { openStore, type Store } from '../store/store.js'
import { IDEMPOTENCY_TTL_MS } from '../http/idempotency.js'
import { bookedInHour, bookedOn, bookWhole, indexBookedDays, indexClaimDays, pastFrom, releasePart, settlePart, stepClaim, stepWhole, sweepEnded, sweepPastDays, takePart } from './capacity.js'
import { partitionOf } from '../cluster/screen-partitions.js'
import type { BookingItem } from './records.js'
import { give } from './screen-bookings.js'

// The ledger's rules without a service: a partition counts a claim's part from its take until its settlement drops
// it or a release gives it back, and never past a day's capacity; a claim's life moves only as its rules allow, so
// that a late or stale step (a paused node's, a retry's) changes nothing.

const A = { node: 'a', incarnation: 'a1' }
const B = { node: 'b', incarnation: 'b1' }
const item = (spots: number, over: Partial<BookingItem> = {}): BookingItem => ({ screen: 's1', date: '2026-12-01', spots, capacity: 10, version: 5, at: 0, ...over })

function store (t: { teardown (fn: () => unknown): void }): Store {
  const dir = mkdtempSync(join(tmpdir(), 'oohbid-capacity-'))
  const s = openStore(dir)
  t.teardown(async () => { await s.close(); rmSync(dir, { recursive: true, force: true }) })
  return s
}

t.test('a partition counts tentative parts, never books past capacity, and drops or gives parts back once', async (t) => {
  const s = store(t)
  const p = partitionOf('s1', 1)
  s.write(() => {
    t.same(takePart(s, 'c1', p, 1, [item(6)], 0), { ok: true }, 'six of ten taken, tentatively')
    t.match(takePart(s, 'c2', p, 1, [item(6)], 0), { ok: false, reason: 'capacity_unavailable', short: { screen: 's1', free: 4, asked: 6 } }, 'a tentative part is counted: six more do not fit')
    t.same(takePart(s, 'c1', p, 1, [item(1)], 0), { ok: false, reason: 'settled' }, 'a claim takes a partition once')
    settlePart(s, 'c1', p, 'abort', 0)
    t.equal(bookedOn(s, 's1', '2026-12-01'), 0, 'an aborted claim gives its part back')
    t.same(takePart(s, 'c1', p, 1, [item(1)], 0), { ok: false, reason: 'settled' }, 'and its take, landing late, takes nothing')
    t.same(takePart(s, 'c3', p, 1, [item(10)], 0), { ok: true })
    settlePart(s, 'c3', p, 'commit', 0)
    settlePart(s, 'c3', p, 'abort', 0)
    t.equal(bookedOn(s, 's1', '2026-12-01'), 10, 'a part is settled once: a second settlement moves nothing')
    t.same(releasePart(s, 'c3', p, 0), { ok: true })
    t.same(releasePart(s, 'c3', p, 0), { ok: false, reason: 'claim_gone' }, 'and released once')
    t.equal(bookedOn(s, 's1', '2026-12-01'), 0)
    t.same(takePart(s, 'c7', p, 1, [item(2)], 0), { ok: true })
    t.same(releasePart(s, 'c7', p, 0), { ok: true }, 'a release landing before its commit\'s settlement gives the part back')
    settlePart(s, 'c7', p, 'commit', 0)
    t.equal(bookedOn(s, 's1', '2026-12-01'), 0, 'and the settlement finds it settled')
    t.same(takePart(s, 'c4', p, 1, [item(1, { version: 9 })], 0), { ok: true })
    t.same(takePart(s, 'c5', p, 1, [item(1, { version: 8, capacity: 100 })], 0), { ok: false, reason: 'stale_screen' }, 'a take read from an older screen than one the partition has seen is refused')
  })
  t.same(s.write(() => takePart(s, 'c6', (partitionOf('s1', 16) + 1) % 16, 16, [item(1)], 0)), { ok: false, reason: 'wrong_partition' }, 'a part whose screen is another partition\'s is refused')
  t.equal(new Set(Array.from({ length: 200 }, (_, i) => partitionOf(`screen-${i}`, 16))).size, 16, 'screens spread over every partition')
})

t.test('a claim is committed by its coordinator only, aborted by anyone once due, and held, kept or given as its rules allow', async (t) => {
  const s = store(t)
  s.write(() => {
    stepClaim(s, { op: 'intent', claim: 'h', parts: [0, 3], hold_ms: 1000, timeout_ms: 500 }, 100, A)
    t.same(stepClaim(s, { op: 'intent', claim: 'h', parts: [0], timeout_ms: 500 }, 100, B), { ok: false, reason: 'duplicate' })
    t.same(stepClaim(s, { op: 'commit', claim: 'h' }, 200, B), { ok: false, reason: 'not_the_coordinator' }, 'another node cannot commit it')
    t.same(stepClaim(s, { op: 'commit', claim: 'h' }, 200, { node: 'a', incarnation: 'a0' }), { ok: false, reason: 'not_the_coordinator' }, 'nor the coordinator\'s node in an earlier life')
    t.same(stepClaim(s, { op: 'abort', claim: 'h' }, 599, B), { ok: false, reason: 'not_due' }, 'another node aborts it only once the intent is past its time')
    t.same(stepClaim(s, { op: 'commit', claim: 'h' }, 300, A), { ok: true })
    t.same(s.capacityClaims.get('h'), { state: 'held', parts: [0, 3], node: 'a', incarnation: 'a1', intent_at: 100, timeout_ms: 500, hold_ms: 1000, lapses_at: 1300 }, 'held until the commit\'s time plus the hold')
    t.same(stepClaim(s, { op: 'abort', claim: 'h' }, 900, B), { ok: false, reason: 'decided' }, 'the first valid decision stands')
    t.same(stepClaim(s, { op: 'expire', claim: 'h' }, 1299, B), { ok: false, reason: 'not_due' })
    t.same(stepClaim(s, { op: 'give', claim: 'h', from: 'firm' }, 1000, B), { ok: false, reason: 'claim_gone' }, 'a give of a firm booking does not free a hold')
    t.same(stepClaim(s, { op: 'keep', claim: 'h' }, 1300, A), { ok: false, reason: 'expired' }, 'a keep at its lapse is too late')
    t.same(stepClaim(s, { op: 'expire', claim: 'h' }, 1300, B), { ok: true }, 'it lapses')
    t.same(stepClaim(s, { op: 'keep', claim: 'h' }, 1300, A), { ok: false, reason: 'expired' }, 'and cannot be kept after')
    t.same(stepClaim(s, { op: 'give', claim: 'h', from: 'held' }, 1300, A), { ok: false, reason: 'claim_gone' }, 'nor released')
    t.same([...s.capacityLapses.getKeys()], [], 'nothing left to lapse')

    stepClaim(s, { op: 'intent', claim: 'k', parts: [0], hold_ms: 1000, timeout_ms: 500 }, 100, A)
    stepClaim(s, { op: 'commit', claim: 'k' }, 100, A)
    t.same(stepClaim(s, { op: 'keep', claim: 'k' }, 500, A), { ok: true }, 'a hold kept in time is firm')
    t.same(stepClaim(s, { op: 'give', claim: 'k', from: 'held' }, 600, B), { ok: false, reason: 'claim_gone' }, 'a release that read it held, landing after the keep, frees nothing')
    t.same(stepClaim(s, { op: 'expire', claim: 'k' }, 5000, B), { ok: false, reason: 'not_due' }, 'a firm claim never lapses')
    t.same(stepClaim(s, { op: 'give', claim: 'k', from: 'firm' }, 5000, B), { ok: true }, 'a firm booking is given back when booked again')

    stepClaim(s, { op: 'intent', claim: 'x', parts: [1], timeout_ms: 500 }, 100, A)
    t.same(stepClaim(s, { op: 'abort', claim: 'x' }, 600, B), { ok: true }, 'an intent past its time is aborted by anyone')
    t.same(stepClaim(s, { op: 'commit', claim: 'x' }, 601, A), { ok: false, reason: 'decided' }, 'its coordinator, waking, cannot commit it')
  })
})

t.test('claims that ended and parts dropped are removed a day later in their log\'s time; live claims stay', async (t) => {
  const s = store(t)
  const day = IDEMPOTENCY_TTL_MS
  s.write(() => {
    stepClaim(s, { op: 'intent', claim: 'multi', parts: [0, 1], timeout_ms: 1000 }, 1000, A)
    stepClaim(s, { op: 'abort', claim: 'multi' }, 1000, A)
    settlePart(s, 'multi', 0, 'abort', 1000)
    bookWhole(s, 'gone@0', 0, 1, [item(2)], undefined, 2000, A)
    stepWhole(s, { op: 'give', claim: 'gone@0', from: 'firm' }, 0, 2000, A)
    bookWhole(s, 'kept@0', 0, 1, [item(3)], undefined, 2000, A)
  })
  s.write(() => { sweepEnded(s, 'claims', 1000 + day - 1); sweepEnded(s, 0, 1000 + day - 1) })
  t.ok(s.capacityClaims.get('multi') !== undefined && s.capacityParts.get(['multi', 0]) !== undefined, 'an aborted claim and its dropped part are kept for a day: a retry of its booking is answered as the first')
  s.write(() => sweepEnded(s, 'claims', 1000 + day))
  t.equal(s.capacityClaims.get('multi'), undefined, 'then the claims log removes the claim')
  t.ok(s.capacityParts.get(['multi', 0]) !== undefined, 'and only its partition removes its part')
  s.write(() => sweepEnded(s, 0, 2000 + day))
  t.equal(s.capacityParts.get(['multi', 0]), undefined, 'which it does')
  t.equal(s.capacityClaims.get('gone@0'), undefined, 'a claim given back goes with its part')
  t.equal(s.capacityParts.get(['gone@0', 0]), undefined)
  t.equal(s.capacityClaims.get('kept@0')?.state, 'firm', 'a firm claim stays')
  t.equal(s.capacityParts.get(['kept@0', 0])?.state, 'taken', 'with its part')
  t.equal(bookedOn(s, 's1', '2026-12-01'), 3, 'and its spots')
  t.same([...s.capacityEnded.getKeys()].filter(([, at]) => at !== pastFrom('2026-12-01')), [], 'nothing is left to remove before the claims\' days are past')
})

t.test('claims that stood and their parts are removed once their last day is past in every time zone, a day later; a claim declared without its last day stays', async (t) => {
  const s = store(t)
  const keep = IDEMPOTENCY_TTL_MS
  const now = Date.parse('2026-11-30T12:00:00Z')
  const gone = pastFrom('2026-12-03') + keep
  const screenIn = (p: number): string => Array.from({ length: 50 }, (_, i) => `s${i}`).find((screen) => partitionOf(screen, 2) === p)!
  s.write(() => {
    bookWhole(s, 'firm@0', 0, 1, [item(1), item(1, { date: '2026-12-03' })], undefined, now, A)
    bookWhole(s, 'kept@0', 0, 1, [item(1, { date: '2026-12-03' })], 60_000, now, A)
    stepWhole(s, { op: 'keep', claim: 'kept@0' }, 0, now, A)
    stepClaim(s, { op: 'intent', claim: 'multi', parts: [0, 1], timeout_ms: 1000, last_day: '2026-12-03' }, now, A)
    takePart(s, 'multi', 0, 2, [item(1, { screen: screenIn(0) })], now, 'tentative', '2026-12-03')
    takePart(s, 'multi', 1, 2, [item(1, { screen: screenIn(1), date: '2026-12-03' })], now)
    stepClaim(s, { op: 'commit', claim: 'multi' }, now, A)
    settlePart(s, 'multi', 0, 'commit', now)
    settlePart(s, 'multi', 1, 'commit', now)
    stepClaim(s, { op: 'intent', claim: 'legacy', parts: [0], timeout_ms: 1000 }, now, A)
    stepClaim(s, { op: 'commit', claim: 'legacy' }, now, A)
  })
  const sweepAll = (at: number) => s.write(() => { for (const log of ['claims', 0, 1] as const) sweepEnded(s, log, at) })
  sweepAll(pastFrom('2026-12-01') + keep)
  t.equal(s.capacityParts.get(['multi', 0])?.state, 'taken', 'a part whose own days are past stays while its claim\'s are not: a give of the claim finds it')
  sweepAll(gone - 1)
  t.same(['firm@0', 'kept@0', 'multi'].map((c) => s.capacityClaims.get(c)?.state), ['firm', 'firm', 'firm'], 'a day after their last day is past everywhere, firm claims still stand')
  t.ok(s.capacityParts.get(['multi', 1]) !== undefined, 'with their parts')
  sweepAll(gone)
  t.same(['firm@0', 'kept@0', 'multi'].map((c) => s.capacityClaims.get(c)), [undefined, undefined, undefined], 'then every log removes the claims it decides')
  t.same([...s.capacityParts.getKeys()], [], 'and the parts its screens took')
  t.equal(s.capacityClaims.get('legacy')?.state, 'firm', 'a claim declared without its last day (before it was recorded) stays')
  t.same([...s.capacityEnded.getKeys()], [], 'nothing is left to remove')
  t.same([...s.capacityLapses.getKeys()], [], 'nor to lapse')
})

t.test('a claim booked for days already past stands a day; a stale entry of an earlier claim of its id leaves it be; a release finding its part gone marks it given back', async (t) => {
  const s = store(t)
  const keep = IDEMPOTENCY_TTL_MS
  const late = pastFrom('2026-12-01') + 10 * 86_400_000
  s.write(() => bookWhole(s, 'late@0', 0, 1, [item(1)], undefined, late, A))
  s.write(() => sweepEnded(s, 0, late + keep - 1))
  t.equal(s.capacityClaims.get('late@0')?.state, 'firm', 'a day after its booking, it still stands: its request and a retry read it')
  s.write(() => sweepEnded(s, 0, late + keep))
  t.equal(s.capacityClaims.get('late@0'), undefined, 'then it goes')
  const now = Date.parse('2026-11-30T12:00:00Z')
  s.write(() => {
    bookWhole(s, 'again@0', 0, 1, [item(1)], undefined, now, A)
    stepWhole(s, { op: 'give', claim: 'again@0', from: 'firm' }, 0, now, A)
  })
  s.write(() => sweepEnded(s, 0, now + keep))
  t.equal(s.capacityClaims.get('again@0'), undefined, 'a claim given back goes a day later')
  const then = now + keep + 1
  s.write(() => bookWhole(s, 'again@0', 0, 1, [item(1, { date: '2026-12-20' })], undefined, then, A))
  s.write(() => sweepEnded(s, 0, pastFrom('2026-12-01') + keep))
  t.equal(s.capacityClaims.get('again@0')?.state, 'firm', 'its id booked again for later days: the first claim\'s entry leaves the new one be')
  t.equal(s.capacityParts.get(['again@0', 0])?.state, 'taken', 'and its part')
  s.write(() => releasePart(s, 'swept', 0, now))
  t.equal(s.capacityParts.get(['swept', 0])?.state, 'dropped', 'a release whose part is gone (removed with its past days) marks it dropped, so the claim\'s recovery sees it given back')
})

t.test('claims that stood before their last day was recorded are given it from their parts and indexed, once', async (t) => {
  const s = store(t)
  const now = Date.parse('2026-11-30T12:00:00Z')
  s.write(() => {
    stepClaim(s, { op: 'intent', claim: 'old@0', parts: [0], timeout_ms: 0 }, now, A)
    takePart(s, 'old@0', 0, 1, [item(1), item(1, { date: '2026-12-02' })], now, 'taken')
    stepClaim(s, { op: 'commit', claim: 'old@0' }, now, A)
    s.capacityEnded.clearSync()
  })
  indexClaimDays(s)
  t.equal(s.capacityClaims.get('old@0')?.last_day, '2026-12-02', 'its last day, read from its part')
  s.write(() => sweepEnded(s, 0, pastFrom('2026-12-02') + IDEMPOTENCY_TTL_MS))
  t.equal(s.capacityClaims.get('old@0'), undefined, 'then it goes with its days')
  t.equal(s.capacityParts.get(['old@0', 0]), undefined, 'and its part')
})

t.test('a node alone gives back a booking whose days are past and whose claim has left the ledger as given: a placement changed after its flight is not refused', async (t) => {
  const s = store(t)
  const booked = { claim: 'clm_old', screen_ids: ['s1'], start_date: '2026-12-01', end_date: '2026-12-01', spots: 1 }
  s.write(() => bookWhole(s, 'clm_old', 0, 1, [item(1)], undefined, Date.parse('2026-11-30T12:00:00Z'), A))
  const later = pastFrom('2026-12-01') + IDEMPOTENCY_TTL_MS
  t.same(s.write(() => give(s, booked, 'rebook', later)), { ok: true }, 'given')
  t.equal(s.capacityClaims.get('clm_old'), undefined, 'its claim was swept at the step')
  t.same(s.write(() => give(s, { ...booked, end_date: '2026-12-09' }, 'rebook', later)), { ok: false, reason: 'claim_gone' }, 'a claim gone while its days still come is still refused')
})

t.test('a partition removes its booked rows of days past in every time zone, in its log\'s time; later days and other partitions\' stay', async (t) => {
  const s = store(t)
  const now = Date.parse('2026-12-10T12:00:00Z')
  const day = (date: string, screen = 's1', hours?: Array<[number, number, number]>) => item(2, { date, screen, ...(hours !== undefined ? { hours } : {}) })
  // s1 and s2 are screens of partitions 1 and 0 of four.
  const [p1, p2] = [partitionOf('s1', 4), partitionOf('s2', 4)]
  s.write(() => {
    bookWhole(s, `old@${p1}`, p1, 4, [day('2026-12-07', 's1', [[9, 1, 4], [10, 1, 4]]), day('2026-12-08'), day('2026-12-09')], undefined, 0, A)
    bookWhole(s, `other@${p2}`, p2, 4, [day('2026-12-01', 's2')], undefined, 0, A)
  })
  s.write(() => sweepPastDays(s, p1, now))
  t.equal(bookedOn(s, 's1', '2026-12-07'), 0, 'a day three days before the log\'s date is past everywhere: its spots go')
  t.equal(bookedInHour(s, 's1', '2026-12-07', 9), 0, 'with its hours')
  t.equal(bookedOn(s, 's1', '2026-12-08'), 2, 'two days before may still be today somewhere: it stays')
  t.equal(bookedOn(s, 's1', '2026-12-09'), 2)
  t.equal(bookedOn(s, 's2', '2026-12-01'), 2, 'another partition\'s rows are its own log\'s to remove')
  s.write(() => sweepPastDays(s, p2, now))
  t.equal(bookedOn(s, 's2', '2026-12-01'), 0, 'which it does')
  t.same([...s.bookedDays.getKeys()], [[p1, '2026-12-08', 's1'], [p1, '2026-12-09', 's1']], 'what is left is indexed by partition and date')
  s.write(() => stepWhole(s, { op: 'give', claim: `old@${p1}`, from: 'firm' }, p1, now, A))
  t.same([...s.bookedDays.getKeys()], [], 'a claim given back takes its days out of the index with its spots')
  t.equal(bookedOn(s, 's1', '2026-12-08'), 0, 'and a swept day stays at none, never below')
})

t.test('booked rows written before the index are indexed once, by their screen\'s partition', async (t) => {
  const s = store(t)
  s.write(() => {
    s.booked.putSync(['s1', '2026-01-01'], 3)
    s.booked.putSync(['s2', '2026-01-02'], 1)
  })
  indexBookedDays(s, 4)
  t.same([...s.bookedDays.getKeys()], [[partitionOf('s2', 4), '2026-01-02', 's2'], [partitionOf('s1', 4), '2026-01-01', 's1']])
  s.write(() => s.bookedDays.removeSync([partitionOf('s1', 4), '2026-01-01', 's1']))
  indexBookedDays(s, 4)
  t.equal(s.bookedDays.getCount(), 1, 'once: a later start does not walk the table again')
})
