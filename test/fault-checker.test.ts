import t from 'tap'
import { checkBookings, checkProofs, checkRegisters, type ChainRead, type ProveArgs, type RegisterArgs, type RegisterRead, type ReserveArgs } from '../scripts/lib/faults/checker.js'
import { History, type Answer } from '../scripts/lib/faults/history.js'

// The invariants' client model without a cluster: what a client may conclude from each answer it got, and what the
// checks report of the reads.

const day = '2026-12-11'
const args = (key: string): ReserveArgs => ({ seat: 's1', screens: ['scr_a'], date: day, spots: 144, key })
const reads = (booked: number) => ({ days: ['node-1', 'node-2'].map((node) => ({ node, screen: 'scr_a', date: day, capacity: 5760, booked })), reservations: [] })
const accounts = (history: History, booked: number) => checkBookings(history, reads(booked)).find((c) => c.name === 'spots booked account for acknowledged holds')!

/** A client's tries of one hold, each answered as given. */
async function tries (history: History, key: string, answers: Answer[]): Promise<void> {
  for (const answer of answers) await history.run('c0', 'node-3', 'reserve', args(key), async () => answer)
}

t.test('a hold retried into 409 idempotency_key_in_use is still unknown: its first try may have booked', async (t) => {
  const history = new History()
  await tries(history, 'k1', [{ status: 503, body: {} }, { status: 409, body: { error_code: 'idempotency_key_in_use' } }])
  t.same(accounts(history, 144).violations, [], '144 booked is explained by the hold whose outcome is unknown')
  t.same(accounts(history, 0).violations, [], 'and so is nothing booked')
})

t.test('a hold retried into a refusal is known not done: spots booked for it are a violation', async (t) => {
  const history = new History()
  await tries(history, 'k1', [{ status: 503, body: {} }, { status: 409, body: { error_code: 'capacity_unavailable' } }])
  t.same(accounts(history, 0).violations, [], 'nothing booked, as the refusal says')
  t.equal(accounts(history, 144).violations.length, 2, 'spots booked on both nodes for a hold refused are reported')
})

t.test('proofs: a play acknowledged is listed on every node under the proof it was told, once, in chains of one line alike', async (t) => {
  const history = new History()
  const prove = async (impressionId: string, answer: Answer) => await history.run('c0', 'node-1', 'prove', { impressionId, screen: 'scr_a' } satisfies ProveArgs, async () => answer)
  const told = (status: string, proof_id: string): Answer => ({ status: 200, body: { data: { results: [{ status, proof_id }] } } })
  await prove('i1', told('accepted', 'p1'))
  await prove('i2', { status: 503, body: {} })
  await prove('i2', told('duplicate', 'p2'))
  const link = (proof_id: string, impressionId: string, seq: number, prev: string) => ({ proof_id, impressionId, chain: { seq, prev_digest: prev, digest: `d${seq}` } })
  const chain = [link('p1', 'i1', 1, '0'), link('p2', 'i2', 2, 'd1')]
  const reads = (second: ChainRead['proofs']): ChainRead[] => [{ node: 'node-1', screen: 'scr_a', proofs: chain }, { node: 'node-2', screen: 'scr_a', proofs: second }]
  const violations = (second: ChainRead['proofs']) => Object.fromEntries(checkProofs(history, reads(second)).map((c) => [c.name, c.violations.length]))
  t.same(violations(chain), { 'acknowledged plays proven on every node': 0, 'one proof an impression id': 0, 'each screen\'s proof chain one line': 0, 'nodes list each chain alike': 0 }, 'two plays, one retried after a 503 into a duplicate: all held')
  t.match(violations([chain[0]!]), { 'acknowledged plays proven on every node': 1, 'nodes list each chain alike': 1 }, 'a play missing on a node')
  t.match(violations([chain[0]!, link('p3', 'i2', 2, 'd1')]), { 'acknowledged plays proven on every node': 1, 'nodes list each chain alike': 1 }, 'a play listed under another proof than it was told')
  t.match(violations([chain[0]!, link('p2', 'i2', 2, 'x')]), { 'each screen\'s proof chain one line': 1 }, 'a proof not chained to the one before')
  t.match(violations([...chain, link('p4', 'i3', 2, 'd1')]), { 'each screen\'s proof chain one line': 1, 'nodes list each chain alike': 1 }, 'a place held twice')
  t.match(violations([...chain, link('p5', 'i1', 3, 'd2')]), { 'one proof an impression id': 1 }, 'an impression id proven twice')
  await prove('i4', { status: 200, body: { data: { results: [{ status: 'rejected', error: { code: 'creative_not_found' } }] } } })
  t.same(violations(chain), { 'acknowledged plays proven on every node': 0, 'one proof an impression id': 0, 'each screen\'s proof chain one line': 0, 'nodes list each chain alike': 0 }, 'a play answered rejected is not acknowledged: proven nowhere, as told')
  t.match(violations([...chain, link('p6', 'i4', 3, 'd2')]), { 'acknowledged plays proven on every node': 1 }, 'a play answered rejected, yet proven on a node')
})

t.test('registers: a record\'s field rewritten under its lock shows its last acknowledged value or a later one asked for, alike on every node', async (t) => {
  const history = new History()
  const rewrite = async (register: string, value: number, answer: Answer) => await history.run(`c-${register}`, 'node-1', 'rewrite', { record: 'seat-1', register, value, key: `${register}/${value}` } satisfies RegisterArgs, async () => answer)
  await rewrite('deals', 1_000_000, { status: 200, body: {} })
  await rewrite('deals', 1_000_001, { status: 200, body: {} })
  await rewrite('deals', 1_000_002, { status: 503, body: {} })
  await rewrite('bidding', 1_000_000, { status: 400, body: {} })
  const reads = (deals: number | undefined, deals2 = deals, bidding?: number): RegisterRead[] => [
    { node: 'node-1', record: 'seat-1', register: 'deals', value: deals },
    { node: 'node-2', record: 'seat-1', register: 'deals', value: deals2 },
    { node: 'node-1', record: 'seat-1', register: 'bidding', value: bidding },
    { node: 'node-2', record: 'seat-1', register: 'bidding', value: bidding }
  ]
  const violations = (r: RegisterRead[]) => Object.fromEntries(checkRegisters(history, r).map((c) => [c.name, c.violations.length]))
  const none = { 'no acknowledged rewrite overwritten by an older one': 0, 'no register shows a value nobody wrote': 0, 'nodes agree on each register': 0 }
  t.same(violations(reads(1_000_001)), none, 'the last acknowledged value')
  t.same(violations(reads(1_000_002)), none, 'or a later one whose outcome is unknown')
  t.match(violations(reads(1_000_000)), { 'no acknowledged rewrite overwritten by an older one': 2 }, 'an older value back on both nodes: a lost update')
  t.match(violations(reads(1_000_001, 1_000_002)), { 'nodes agree on each register': 1 }, 'two nodes that differ')
  t.match(violations(reads(999)), { 'no register shows a value nobody wrote': 2 }, 'a value no client asked for')
  t.same(violations(reads(1_000_001, 1_000_001, 1_000_000)), none, 'a refused rewrite is not acknowledged, and its value was asked for')
})

