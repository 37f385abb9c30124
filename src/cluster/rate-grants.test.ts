import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { openStore, type Store } from '../store/store.js'
import { rateMachine } from './rate-grants.js'

// The rate windows' rule without an engine: each part decided at its place in the log from the parts before it in
// the same window, never past the limit however many nodes ask at once, and a window's total dropped once it is long
// over in log time.

function store (t: { teardown (fn: () => unknown): void }): Store {
  const dir = mkdtempSync(join(tmpdir(), 'oohbid-rates-'))
  const s = openStore(dir)
  t.teardown(async () => { await s.close(); rmSync(dir, { recursive: true, force: true }) })
  return s
}

const MINUTE = 60_000

t.test('parts granted in log order never pass the window\'s limit; each window counts alone', async (t) => {
  const s = store(t)
  const m = rateMachine(s)
  let seq = 0
  const ask = (window: string, want: number, limit = 600, ends = 10 * MINUTE) => s.write(() => m.apply({ op: 'grant', window, ends, want, limit }, { log: 'RATES', seq: ++seq, logTime: 9 * MINUTE + seq, from: { node: `node-${seq % 3}`, incarnation: 'x' } }))
  t.same(ask('bidding\u0000k1\u00000', 240), { status: 'accepted', result: { granted: 240, total: 240 } })
  t.same(ask('bidding\u0000k1\u00000', 240), { status: 'accepted', result: { granted: 240, total: 480 } }, 'another node\'s part counts against the same limit')
  t.same(ask('bidding\u0000k1\u00000', 240), { status: 'accepted', result: { granted: 120, total: 600 } }, 'the third gets only what is left')
  t.same(ask('bidding\u0000k1\u00000', 60), { status: 'accepted', result: { granted: 0, total: 600 } }, 'and past the limit nothing is granted')
  t.same(ask('bidding\u0000k2\u00000', 60), { status: 'accepted', result: { granted: 60, total: 60 } }, 'another key\'s window counts from nothing')
  t.same(ask('bidding\u0000k1\u000060000', 60, 600, 11 * MINUTE), { status: 'accepted', result: { granted: 60, total: 60 } }, 'and so does the key\'s next window')
  t.same(ask('bidding\u0000k1\u00000', 100, 1000), { status: 'accepted', result: { granted: 100, total: 700 } }, 'a limit raised within the window grants more')
})

t.test('a window\'s total is kept ten minutes of log time past its end, then dropped as the log moves on', async (t) => {
  const s = store(t)
  const m = rateMachine(s)
  const ask = (window: string, ends: number, logTime: number) => s.write(() => m.apply({ op: 'grant', window, ends, want: 10, limit: 100 }, { log: 'RATES', seq: 1, logTime, from: { node: 'node-1', incarnation: 'x' } }))
  for (let i = 0; i < 100; i++) ask(`w${i}`, MINUTE + i, MINUTE)
  t.same(ask('w0', MINUTE, 11 * MINUTE - 1), { status: 'accepted', result: { granted: 10, total: 20 } }, 'an asker whose clock is behind still finds the window\'s total ten minutes past its end')
  ask('other', 20 * MINUTE, 12 * MINUTE)
  t.equal([...s.rateGrants.getKeys()].length, 37, 'an apply drops at most 64 ended windows')
  ask('other', 20 * MINUTE, 12 * MINUTE)
  t.same([...s.rateGrants.getKeys()], [[20 * MINUTE, 'other']], 'then the rest, leaving only the live window')
})
