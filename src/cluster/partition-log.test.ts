import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { IDEMPOTENCY_TTL_MS } from '../http/idempotency.js'
import { openStore } from '../store/store.js'
import { decideEntry, keyDecided, trimVerdicts, type PartitionEntry } from './partition-log.js'
import type { PartitionMark } from './records.js'

// The partition log's rules as a pure function of the mark, the entry and its timestamp: takeovers counted in log
// time, fencing by epoch and owner, time to live, and one outcome a key (no engine; test/partition-log.test.ts runs
// them against one).

const options = { leaseMs: 1000, ttlMs: 5000 }
const mark: PartitionMark = { stream_created: 'c', applied: 9, digest: '', log_time: 10_000, epoch: 3, owner: { node: 'a', incarnation: 'a1' }, last_beat_at: 9_500 }
const cmd = (over: Partial<Extract<PartitionEntry, { t: 'cmd' }>> = {}): PartitionEntry => ({ t: 'cmd', key: 'k', fenced: true, epoch: 3, node: 'a', incarnation: 'a1', proposed_at: 9_900, body: {}, ...over })

t.test('a takeover is accepted for the next epoch only, and only once the lease has passed in log time', async (t) => {
  const own = (epoch: number): PartitionEntry => ({ t: 'own', epoch, node: 'b', incarnation: 'b1' })
  t.match(decideEntry(mark, false, own(4), 10_400, options).verdict, { status: 'refused', reason: 'owner_alive' }, '900 ms after the last beat')
  const taken = decideEntry(mark, false, own(4), 10_600, options)
  t.match(taken.verdict, { status: 'accepted' }, '1,100 ms after it')
  t.same([taken.mark.epoch, taken.mark.owner, taken.mark.last_beat_at], [4, { node: 'b', incarnation: 'b1' }, 10_600])
  t.match(decideEntry(mark, false, own(5), 20_000, options).verdict, { status: 'refused', reason: 'stale_epoch' }, 'an epoch skipped is refused')
  t.match(decideEntry(mark, false, own(3), 20_000, options).verdict, { status: 'refused', reason: 'stale_epoch' }, 'so is the current one')
  t.equal(decideEntry(mark, false, own(4), 5_000, options).mark.log_time, 10_000, 'log time never goes back, whatever a timestamp says')
  t.match(decideEntry({ ...mark, owner: undefined, epoch: 0 }, false, own(1), 1, options).verdict, { status: 'accepted' }, 'a partition without an owner is taken at once')
})

t.test('a fenced command counts only from the owner of the current epoch, in this life', async (t) => {
  t.equal(decideEntry(mark, false, cmd(), 10_000, options).verdict, 'machine', 'the owner\'s, under its epoch: to the machine')
  t.match(decideEntry(mark, false, cmd({ epoch: 2 }), 10_000, options).verdict, { reason: 'fenced' }, 'under an older epoch')
  t.match(decideEntry(mark, false, cmd({ node: 'b', incarnation: 'b1' }), 10_000, options).verdict, { reason: 'fenced' }, 'from another node')
  t.match(decideEntry(mark, false, cmd({ incarnation: 'a0' }), 10_000, options).verdict, { reason: 'fenced' }, 'from the owner\'s previous life')
  t.equal(decideEntry(mark, false, cmd({ fenced: false, node: 'b', incarnation: 'b1', epoch: 0 }), 10_000, options).verdict, 'machine', 'an unfenced command (a booking) from anyone')
})

t.test('a command decided once, or landing past its time to live, does not reach the machine', async (t) => {
  t.match(decideEntry(mark, true, cmd(), 10_000, options).verdict, { reason: 'duplicate' })
  t.match(decideEntry(mark, false, cmd({ proposed_at: 4_000 }), 10_000, options).verdict, { reason: 'late' }, 'proposed 6 s before the log time it lands at')
  t.equal(decideEntry(mark, false, cmd({ proposed_at: 5_000 }), 10_000, options).verdict, 'machine', 'at its time to live exactly, still in time')
})

t.test('a beat keeps the lease of the owner only', async (t) => {
  t.equal(decideEntry(mark, false, { t: 'beat', epoch: 3, node: 'a', incarnation: 'a1' }, 10_300, options).mark.last_beat_at, 10_300)
  const stale = decideEntry(mark, false, { t: 'beat', epoch: 2, node: 'a', incarnation: 'a1' }, 10_300, options)
  t.same([stale.verdict, stale.mark.last_beat_at], [{ status: 'refused', reason: 'fenced' }, 9_500], 'an old epoch\'s beat moves nothing')
})

t.test('the owner hands a partition over, and a restarted owner takes its partitions back at once', async (t) => {
  const given = decideEntry(mark, false, { t: 'give', epoch: 3, node: 'a', incarnation: 'a1' }, 10_100, options)
  t.same([given.verdict, given.mark.owner, given.mark.epoch], [{ status: 'accepted' }, undefined, 3], 'given: no owner, the epoch kept')
  t.match(decideEntry(given.mark, false, cmd(), 10_200, options).verdict, { reason: 'fenced' }, 'the giver\'s commands on their way are refused')
  t.match(decideEntry(given.mark, false, { t: 'own', epoch: 4, node: 'b', incarnation: 'b1' }, 10_200, options).verdict, { status: 'accepted' }, 'and the next takeover is accepted within what was the lease')
  t.match(decideEntry(mark, false, { t: 'give', epoch: 3, node: 'b', incarnation: 'b1' }, 10_100, options).verdict, { reason: 'fenced' }, 'only the owner may give')
  t.match(decideEntry(mark, false, { t: 'give', epoch: 3, node: 'a', incarnation: 'a0' }, 10_100, options).verdict, { reason: 'fenced' }, 'in this life')
  t.match(decideEntry(mark, false, { t: 'own', epoch: 4, node: 'a', incarnation: 'a2' }, 9_600, options).verdict, { status: 'accepted' }, 'the owner\'s node restarted takes over within the lease: its old life is fenced')
})

t.test('verdicts and the keys they answer are kept a day of log time, then removed oldest first as the log moves on', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'oohbid-verdicts-'))
  const store = openStore(dir)
  t.teardown(async () => { await store.close(); rmSync(dir, { recursive: true, force: true }) })
  const day = IDEMPOTENCY_TTL_MS
  store.write(() => {
    for (let seq = 1; seq <= 100; seq++) {
      store.partitionVerdicts.putSync(['PART_0', seq], { key: `k${seq}`, verdict: { status: 'accepted' }, at: 1000 + seq })
      store.partitionKeys.putSync(['PART_0', `k${seq}`], seq)
    }
    store.partitionVerdicts.putSync(['PART_1', 1], { key: 'other', verdict: { status: 'accepted' }, at: 1 })
    // A retry's key that a later entry used up: removing the first verdict leaves it.
    store.partitionKeys.putSync(['PART_0', 'k2'], 100)
  })
  const keys = (log: string) => [...store.partitionVerdicts.getKeys({ start: [log, 0], end: [log, Infinity] } as never)].length
  t.ok(keyDecided(store, 'PART_0', 'k60', 1059 + day, day), 'a key used up less than a day ago keeps a duplicate from running')
  t.notOk(keyDecided(store, 'PART_0', 'k60', 1060 + day, day), 'a day after, it does not, its row removed or not: nodes remove rows at different points and decide alike')
  store.write(() => trimVerdicts(store, 'PART_0', 1000 + day))
  t.equal(keys('PART_0'), 100, 'nothing younger than a day goes')
  store.write(() => trimVerdicts(store, 'PART_0', 1050 + day))
  t.equal(keys('PART_0'), 50, 'a day old or older: removed up to the first younger one')
  t.equal(store.partitionKeys.get(['PART_0', 'k1']), undefined, 'with the key each answered')
  t.equal(store.partitionKeys.get(['PART_0', 'k2']), 100, 'but not a key that answers a later entry')
  store.write(() => trimVerdicts(store, 'PART_0', 10_000 + day))
  t.equal(keys('PART_0'), 0, 'the rest, 64 at most an apply')
  t.equal(keys('PART_1'), 1, 'another log\'s verdicts are its own apply\'s to remove')
})
