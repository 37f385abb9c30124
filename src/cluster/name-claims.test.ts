import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { openStore, type Store } from '../store/store.js'
import { FencedCommits } from './fenced-commits.js'
import { claimable, CLAIM_TTL_MS, nameMachine } from './name-claims.js'

// The names' rules without an engine: what the names' log decides for each command at its place in the log, given
// only the rows and log time, which every node applying the log shares.

function store (t: { teardown (fn: () => unknown): void }): Store {
  const dir = mkdtempSync(join(tmpdir(), 'oohbid-names-'))
  const s = openStore(dir)
  t.teardown(async () => { await s.close(); rmSync(dir, { recursive: true, force: true }) })
  return s
}

const from = { node: 'n1', incarnation: 'i1' }

t.test('the first claim wins; its owner may claim again; a release only by its owner frees the name', async (t) => {
  const s = store(t)
  const m = nameMachine(s, new FencedCommits({ store: s, onApplied: () => {}, writer: 'data-1' }))
  const apply = (body: unknown, logTime: number) => s.write(() => m.apply(body, { log: 'NAMES', seq: 1, logTime, from }))
  t.same(apply({ op: 'claim', name: 'seat:acme', owner: 'r1' }, 1000), { status: 'accepted' }, 'the first claim wins')
  t.same(apply({ op: 'claim', name: 'seat:acme', owner: 'r2' }, 1001), { status: 'refused', reason: 'held' }, 'a second owner is refused')
  t.same(apply({ op: 'claim', name: 'seat:acme', owner: 'r1' }, 1002), { status: 'accepted' }, 'the owner\'s retry finds it its own (its first answer was lost)')
  t.same(apply({ op: 'release', name: 'seat:acme', owner: 'r2' }, 1003), { status: 'refused', reason: 'not_held' }, 'another owner cannot give it back')
  t.same(apply({ op: 'release', name: 'seat:acme', owner: 'r1' }, 1004), { status: 'accepted' }, 'the owner gives it back')
  t.same(apply({ op: 'claim', name: 'seat:acme', owner: 'r2' }, 1005), { status: 'accepted' }, 'then the next claim wins')
  t.same(apply({ op: 'release', name: 'seat:acme', owner: 'r1' }, 1006), { status: 'refused', reason: 'not_held' }, 'a late release of the first owner leaves the second\'s claim')
  t.equal(s.nameClaims.get('seat:acme')?.owner, 'r2')
})

t.test('a claim is taken over only when the claimer says how old is over, and only past it in log time', async (t) => {
  const s = store(t)
  const m = nameMachine(s, new FencedCommits({ store: s, onApplied: () => {}, writer: 'data-1' }))
  const apply = (body: unknown, logTime: number) => s.write(() => m.apply(body, { log: 'NAMES', seq: 1, logTime, from }))
  apply({ op: 'claim', name: 'key:k1', owner: 'r1' }, 10_000)
  t.same(apply({ op: 'claim', name: 'key:k1', owner: 'r2', take_over_after_ms: 4000 }, 14_000), { status: 'refused', reason: 'held' }, 'at 4 s old it is still its holder\'s')
  t.same(apply({ op: 'claim', name: 'key:k1', owner: 'r3' }, 60_000), { status: 'refused', reason: 'held' }, 'a claimer that names no age never takes over')
  t.same(apply({ op: 'claim', name: 'key:k1', owner: 'r2', take_over_after_ms: 4000 }, 14_001), { status: 'accepted' }, 'past it, the claim is taken over')
  t.same(apply({ op: 'release', name: 'key:k1', owner: 'r1' }, 14_002), { status: 'refused', reason: 'not_held' }, 'and the old holder can no longer give it back')
})

t.test('claims lapse at the same point of the log on every node, and their rows go', async (t) => {
  const s = store(t)
  const m = nameMachine(s, new FencedCommits({ store: s, onApplied: () => {}, writer: 'data-1' }))
  const apply = (body: unknown, logTime: number) => s.write(() => m.apply(body, { log: 'NAMES', seq: 1, logTime, from }))
  for (let i = 0; i < 100; i++) apply({ op: 'claim', name: `n${i}`, owner: 'r1' }, 1000 + i)
  t.same(apply({ op: 'claim', name: 'n0', owner: 'r2' }, 1000 + CLAIM_TTL_MS - 1), { status: 'refused', reason: 'held' }, 'held until its time is up')
  t.same(apply({ op: 'claim', name: 'n0', owner: 'r2' }, 1000 + CLAIM_TTL_MS), { status: 'accepted' }, 'free once it has lapsed in log time')
  apply({ op: 'claim', name: 'other', owner: 'r1' }, 2000 + CLAIM_TTL_MS)
  t.ok(s.nameClaims.get('n99') !== undefined, 'an apply removes at most 64 lapsed claims: the last of 99 is left')
  apply({ op: 'claim', name: 'other', owner: 'r1' }, 2001 + CLAIM_TTL_MS)
  t.equal(s.nameClaims.get('n99'), undefined, 'lapsed claims are removed as the log moves on')
  t.equal([...s.nameClaims.getKeys()].length, 2, 'only the live claims are left')
  t.equal([...s.nameLapses.getKeys()].length, 2, 'and their lapses')
})

t.test('whether a claim would win, as the log decides it and a waiting node looks', async (t) => {
  const held = { owner: 'r1', at: 1000, lapses_at: 1000 + CLAIM_TTL_MS }
  t.ok(claimable(undefined, 'r2', 2000), 'nothing holds the name')
  t.ok(claimable(held, 'r1', 2000), 'its own claim')
  t.notOk(claimable(held, 'r2', 2000), 'another\'s live claim')
  t.notOk(claimable(held, 'r2', 5000, 4000), 'not yet older than the take-over age')
  t.ok(claimable(held, 'r2', 5001, 4000), 'older than it')
  t.ok(claimable(held, 'r2', 1000 + CLAIM_TTL_MS), 'a lapsed claim')
})
