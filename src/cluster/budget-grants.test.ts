import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { openStore, type Store } from '../store/store.js'
import { budgetMachine } from './budget-grants.js'

// The grants' rule without an engine: each grant decided at its place in the log from the grants before it, never
// past the budget however many nodes ask at once, and credited to the node that asked in the same transaction.

function store (t: { teardown (fn: () => unknown): void }): Store {
  const dir = mkdtempSync(join(tmpdir(), 'oohbid-grants-'))
  const s = openStore(dir)
  t.teardown(async () => { await s.close(); rmSync(dir, { recursive: true, force: true }) })
  return s
}

t.test('grants in log order never pass the budget, and each is credited once to the node that asked', async (t) => {
  const s = store(t)
  const credited: Array<[string, number, number]> = []
  const m = budgetMachine(s, 'node-1', { granted: (campaign, micros, seq) => credited.push([campaign, micros, seq]) })
  let seq = 0
  const ask = (node: string, want: number, limit = 1_000_000, before = 0) => s.write(() => m.apply({ op: 'grant', campaign: 'cmp', want, limit, before }, { log: 'BUDGET', seq: ++seq, logTime: 1000 + seq, from: { node, incarnation: 'x' } }))
  t.same(ask('node-1', 400_000), { status: 'accepted', result: { granted: 400_000, total: 400_000 } })
  t.same(ask('node-2', 400_000), { status: 'accepted', result: { granted: 400_000, total: 800_000 } }, 'another node\'s grant counts against the same budget')
  t.same(ask('node-1', 400_000), { status: 'accepted', result: { granted: 200_000, total: 1_000_000 } }, 'the third gets only what is left')
  t.same(ask('node-3', 400_000), { status: 'accepted', result: { granted: 0, total: 1_000_000 } }, 'and past the budget nothing is granted')
  t.same(credited, [['cmp', 400_000, 1], ['cmp', 200_000, 3]], 'this node is credited its own grants, with their place in the log, and no one else\'s')
  t.same(ask('node-2', 400_000, 1_500_000), { status: 'accepted', result: { granted: 400_000, total: 1_400_000 } }, 'a budget raised grants more')
})

t.test('a campaign granted before its grants were in the log starts from what the asker saw granted', async (t) => {
  const s = store(t)
  const m = budgetMachine(s, 'node-1', { granted: () => {} })
  const ask = (before: number, seq: number) => s.write(() => m.apply({ op: 'grant', campaign: 'old', want: 300_000, limit: 1_000_000, before }, { log: 'BUDGET', seq, logTime: seq, from: { node: 'node-2', incarnation: 'x' } }))
  t.same(ask(900_000, 1), { status: 'accepted', result: { granted: 100_000, total: 1_000_000 } }, 'the first grant in the log counts the 900,000 granted before')
  t.same(ask(0, 2), { status: 'accepted', result: { granted: 0, total: 1_000_000 } }, 'later asks count the log\'s total, not theirs')
})

t.test('a node that restores a checkpoint is credited the last part granted to it, at that part\'s place in the log', async (t) => {
  const s = store(t)
  const credited: Array<[string, number, number]> = []
  const m = budgetMachine(s, 'node-1', { granted: (campaign, micros, seq) => credited.push([campaign, micros, seq]) })
  const ask = (node: string, campaign: string, want: number, seq: number) => s.write(() => m.apply({ op: 'grant', campaign, want, limit: 1_000_000, before: 0 }, { log: 'BUDGET', seq, logTime: seq, from: { node, incarnation: 'x' } }))
  ask('node-1', 'a', 100_000, 1)
  ask('node-1', 'a', 200_000, 2)
  ask('node-2', 'a', 300_000, 3)
  ask('node-1', 'b', 50_000, 4)
  credited.length = 0
  s.write(() => m.restored!())
  t.same(credited.sort(), [['a', 200_000, 2], ['b', 50_000, 4]], 'its last part of each campaign, with its sequence (the delivery row credits a sequence once), and none of node-2\'s')
})

t.test('a part given back lowers the total granted, so the log grants it again', async (t) => {
  const s = store(t)
  const m = budgetMachine(s, 'node-1', { granted: () => {} })
  let seq = 0
  const at = (node: string) => ({ log: 'BUDGET', seq: ++seq, logTime: 1000 + seq, from: { node, incarnation: 'x' } })
  s.write(() => m.apply({ op: 'grant', campaign: 'cmp', want: 600_000, limit: 1_000_000, before: 0 }, at('node-3')))
  s.write(() => m.apply({ op: 'grant', campaign: 'cmp', want: 600_000, limit: 1_000_000, before: 0 }, at('node-2')))
  t.same(s.write(() => m.apply({ op: 'return', campaign: 'cmp', micros: 250_000 }, at('node-3'))), { status: 'accepted', result: { total: 750_000 } }, 'node-3 gives back what it holds unspent')
  t.same(s.write(() => m.apply({ op: 'grant', campaign: 'cmp', want: 600_000, limit: 1_000_000, before: 0 }, at('node-2'))), { status: 'accepted', result: { granted: 250_000, total: 1_000_000 } }, 'and node-2, asking, is granted it: never past the budget')
})

t.test('a node gives back a part it has not spent from for ten seconds once the whole budget is granted, once', async (t) => {
  const { BudgetGrants } = await import('./budget-grants.js')
  const { createLogger } = await import('../log.js')
  const s = store(t)
  s.write(() => s.budgetGrants.putSync('full', 1_000_000))
  s.write(() => s.budgetGrants.putSync('open', 400_000))
  const held = new Map([['full', { left: 300_000, spent: 100_000 }], ['open', { left: 300_000, spent: 0 }]])
  const proposed: unknown[] = []
  let scans = 0
  const grants = new BudgetGrants({
    store: s,
    book: {
      limitOf: () => 1_000_000,
      grantedBefore: () => 0,
      granted: () => {},
      unspent: () => { scans++; return [...held].filter(([, h]) => h.left > 0).map(([campaignId]) => campaignId) },
      leaseOf: (campaignId) => ({ spent: held.get(campaignId)?.spent ?? 0, left: held.get(campaignId)?.left ?? 0 }),
      giveUp: (campaignId) => {
        const h = held.get(campaignId)!
        const left = h.left
        h.left = 0
        return left
      }
    },
    propose: async (_key, body) => { proposed.push(body); return { status: 'accepted' } },
    log: createLogger('error')
  })
  grants.giveBackIdle(0)
  grants.giveBackIdle(9_000)
  t.same(proposed, [], 'nothing before ten seconds without a spend')
  held.get('full')!.spent = 150_000
  grants.giveBackIdle(10_000)
  t.same(proposed, [], 'a spend starts the ten seconds again')
  grants.giveBackIdle(20_500)
  t.same(proposed, [{ op: 'return', campaign: 'full', micros: 300_000 }], 'the idle part of a budget granted whole goes back; a budget with some left to grant keeps its parts')
  grants.giveBackIdle(40_000)
  t.equal(proposed.length, 1, 'given back once')
  // A part credited since start is followed without reading every campaign again.
  held.set('later', { left: 200_000, spent: 0 })
  s.write(() => s.budgetGrants.putSync('later', 1_000_000))
  grants.credited('later')
  grants.giveBackIdle(41_000)
  grants.giveBackIdle(51_000)
  t.same(proposed[1], { op: 'return', campaign: 'later', micros: 200_000 }, 'a part credited after start goes back too')
  t.equal(scans, 1, 'every campaign\'s rows read once, at the first look')
})
