import t from 'tap'
import { checkBookings, type ReserveArgs } from '../scripts/lib/faults/checker.js'
import { History, type Answer } from '../scripts/lib/faults/history.js'

// The booking invariants' client model without a cluster: what a client may conclude from each answer it got.

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
