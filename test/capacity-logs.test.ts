import { mkdtempSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { bookedOn } from '../src/campaigns/capacity.js'
import { CLAIMS_LOG, claimsMachine, partitionMachine, recoverClaims, stepAndRelay, takeClaim, type CapacityLogs } from '../src/campaigns/capacity-logs.js'
import type { BookingItem } from '../src/campaigns/records.js'
import { ensureLogStream, PartitionLog, partitionStream } from '../src/cluster/partition-log.js'
import { partitionOf } from '../src/cluster/screen-partitions.js'
import { createLogger } from '../src/log.js'
import { openStore, type Store } from '../src/store/store.js'
import { fileEngine } from './helpers/engine.js'
import { eventually, pause } from './helpers/eventually.js'

// Bookings decided in the logs (issue 47) against a real three-member NATS JetStream engine: two nodes, each with its
// own LMDB, follow four partitions of the screens and the claims log. A claim over several partitions is all or
// nothing, the last spots go to exactly the claims that fit, a coordinator that stops mid-claim has it aborted by the
// other node (its late commit refused), and a hold is kept or lapses, never both, with both nodes holding the same rows.

const PARTITIONS = 4
const DAY = '2026-12-01'

/** Screens spread over the partitions: one in each of the first two, and another of the first. */
function screensIn (): { a: string, b: string, a2: string } {
  const byPart = new Map<number, string[]>()
  for (let i = 0; byPart.size < PARTITIONS || (byPart.get(0)?.length ?? 0) < 2; i++) {
    const id = `screen-${i}`
    const p = partitionOf(id, PARTITIONS)
    byPart.set(p, [...(byPart.get(p) ?? []), id])
  }
  return { a: byPart.get(0)![0]!, a2: byPart.get(0)![1]!, b: byPart.get(1)![0]! }
}

const item = (screen: string, spots: number, at = 0): BookingItem => ({ screen, date: DAY, spots, capacity: 10, version: 1, at })

const engine = await fileEngine(t, 'capacity-logs')
if (engine !== undefined) {
  const { dir } = engine
  const log = createLogger('error')
  const { a, a2, b } = screensIn()
  let run = 0

  /** A node: its store, its logs (this test's streams), and the protocol over them. */
  const node = async (t: { teardown (fn: () => unknown): void }, name: string, prefix: string, incarnation = `${name}-1`) => {
    const nc = await engine.connect()
    const js = nc.jetstream()
    const jsm = await nc.jetstreamManager()
    const store: Store = openStore(mkdtempSync(join(dir, `${name}-`)))
    const streams = [...Array.from({ length: PARTITIONS }, (_, p) => ({ stream: `${prefix}_${partitionStream(p)}`, machine: partitionMachine(store, p, PARTITIONS) })), { stream: `${prefix}_${CLAIMS_LOG}`, machine: claimsMachine(store) }]
    const logs = new Map<string, PartitionLog>()
    for (const { stream, machine } of streams) {
      await ensureLogStream(jsm, stream, 3)
      const l = new PartitionLog({ js, jsm, store, stream, machine, self: { node: name, incarnation }, leaseMs: 10_000, ttlMs: 30_000, ackTimeoutMs: 5000, log })
      await l.start()
      logs.set(stream, l)
    }
    t.teardown(async () => { for (const l of logs.values()) l.stop(); await store.close() })
    const capacity: CapacityLogs = {
      partitions: PARTITIONS,
      propose: async (l, key, body) => await logs.get(l === 'claims' ? `${prefix}_${CLAIMS_LOG}` : `${prefix}_${partitionStream(l)}`)!.propose(key, body, false, 5000),
      // The node these tests recover through acts as every log's owner (src/cluster/partition-owners.ts chooses one).
      owns: () => true
    }
    return { store, capacity, claims: logs.get(`${prefix}_${CLAIMS_LOG}`)! }
  }
  /** Two nodes on streams of their own for each test. */
  const pair = async (t: { teardown (fn: () => unknown): void }) => {
    const prefix = `T${++run}`
    return { one: await node(t, 'node-1', prefix), two: await node(t, 'node-2', prefix) }
  }
  const booked = (s: Store): number[] => [a, a2, b].map((screen) => bookedOn(s, screen, DAY))

  t.test('claims over two partitions racing for the last spots: each is all or nothing, and the rows are the same on both nodes', async (t) => {
    const { one, two } = await pair(t)
    // Six claims from the two nodes at once, each 4 spots on screen a (partition 0) and screen b (partition 1):
    // capacity 10 fits two of them on each screen.
    const outcomes = await Promise.all(Array.from({ length: 6 }, async (_, i) => {
      const n = i % 2 === 0 ? one : two
      return await takeClaim(n.store, n.capacity, `race-${i}`, [item(a, 4), item(b, 4, 1)], undefined, 15_000)
    }))
    const won = outcomes.filter((o) => o.ok).length
    // No claim waits for another's tentative part, so claims that each took one partition first may refuse each other
    // and all lose: what must hold is that no more than fit won, and that the losers' parts are given back (below).
    t.ok(won <= 2, `${won} of six claims won: no more than fit`)
    t.ok(outcomes.filter((o) => !o.ok).every((o) => !o.ok && o.reason === 'capacity_unavailable'), 'the others were refused for want of room, naming a short item')
    await eventually(t, 'both nodes settled every claim', () => [one, two].every((n) => [...n.store.capacityParts.getRange()].every(({ value }) => value.state !== 'tentative')), { until: (x) => x })
    t.same(booked(one.store), [4 * won, 0, 4 * won], 'screens a and b hold exactly the winners\' spots: a claim refused on one took nothing on the other')
    t.same(booked(two.store), booked(one.store), 'and node-2 holds the same rows')
    const rest = 10 - 4 * won
    t.match(await takeClaim(one.store, one.capacity, 'race-rest', [item(a, rest), item(b, rest, 1)], undefined, 15_000), { ok: true }, `the losers held nothing: a claim for the ${rest} spots left on each screen wins`)
  })

  t.test('a coordinator that stops after its takes: the other node aborts its claim once due, and its late commit is refused', async (t) => {
    const { one, two } = await pair(t)
    const claim = 'stopped-1'
    // node-1 declares and takes, then stops before it decides (SIGSTOP, a crash).
    t.match(await one.capacity.propose('claims', `intent:${claim}`, { op: 'intent', claim, parts: [0], timeout_ms: 300 }), { status: 'accepted' })
    t.match(await one.capacity.propose(0, `take:${claim}`, { op: 'take', claim, items: [item(a, 7)] }), { status: 'accepted' })
    await eventually(t, 'node-2 counts the tentative part', () => bookedOn(two.store, a, DAY), { until: (x) => x === 7 })
    t.match(await two.capacity.propose('claims', `abort:${claim}:early`, { op: 'abort', claim }), { status: 'refused', reason: 'not_due' }, 'another node cannot abort it before its time, in log time')
    await pause(400)
    await recoverClaims(two.store, two.capacity, Date.now(), 0)
    await eventually(t, 'node-2 aborted it and dropped its part', () => bookedOn(two.store, a, DAY), { until: (x) => x === 0 })
    t.match(await one.capacity.propose('claims', `commit:${claim}`, { op: 'commit', claim }), { status: 'refused', reason: 'decided' }, 'node-1 wakes: its commit is refused, so it never answers booked')
    await eventually(t, 'node-1 dropped the part too', () => bookedOn(one.store, a, DAY), { until: (x) => x === 0 })
    t.match(await one.capacity.propose(0, 'take:astray', { op: 'take', claim: 'astray', items: [item(b, 1)] }), { status: 'refused', reason: 'wrong_partition' }, 'a take of a screen of another partition is refused')
  })

  t.test('a hold is kept or lapses, never both; a release that read it held frees nothing once it is kept', async (t) => {
    const { one, two } = await pair(t)
    t.same(await takeClaim(one.store, one.capacity, 'hold-1', [item(a, 5)], 60_000, 15_000), { ok: true }, 'held through node-1')
    const [kept, released] = await Promise.all([
      stepAndRelay(one.store, one.capacity, { op: 'keep', claim: 'hold-1' }, 'keep:hold-1:r1'),
      stepAndRelay(two.store, two.capacity, { op: 'give', claim: 'hold-1', from: 'held' }, 'give:hold-1:r2')
    ])
    t.equal([kept.ok, released.ok].filter(Boolean).length, 1, 'a confirmation and a release at once: one wins')
    await eventually(t, 'both nodes agree', () => [one, two].map((n) => bookedOn(n.store, a, DAY)), { until: ([x, y]) => x === y && x === (kept.ok ? 5 : 0) })

    t.same(await takeClaim(two.store, two.capacity, 'hold-2', [item(a2, 3)], 200, 15_000), { ok: true }, 'a hold of 200 ms through node-2')
    await pause(300)
    await recoverClaims(one.store, one.capacity, Date.now(), 0)
    await eventually(t, 'it lapsed on both nodes', () => [one, two].map((n) => bookedOn(n.store, a2, DAY)), { until: ([x, y]) => x === 0 && y === 0 })
    t.same(await stepAndRelay(two.store, two.capacity, { op: 'keep', claim: 'hold-2' }, 'keep:hold-2:late'), { ok: false, reason: 'expired' }, 'a confirmation after the lapse is refused expired')
  })
}
