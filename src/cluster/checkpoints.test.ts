import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { openStore, type Store } from '../store/store.js'
import { prefixSlice, readCheckpoint, restoreCheckpoint, tableSlice } from './checkpoints.js'
import type { PartitionMark } from './records.js'

// A log's checkpoint without an engine: it holds the rows of the log's slice of each table, read as a range where the
// table's keys start with the log's name for them, and a restore replaces that slice and nothing beside it.

function store (t: { teardown (fn: () => unknown): void }): Store {
  const dir = mkdtempSync(join(tmpdir(), 'oohbid-checkpoints-'))
  const s = openStore(dir)
  t.teardown(async () => { await s.close(); rmSync(dir, { recursive: true, force: true }) })
  return s
}

const mark: PartitionMark = { stream_created: 'x', applied: 9, digest: 'd', log_time: 1, epoch: 1, last_beat_at: 1 }

/** Settled bids and ended rows of partitions 1 to 3 and of the claims log. */
function fill (s: Store, tag: string): void {
  s.write(() => {
    for (const p of [1, 2, 3]) {
      s.settledBids.putSync([p, 1000 + p, `scr_${p}`, tag, 'seat'], ['bid', tag])
      s.capacityEnded.putSync([p, 2000 + p, `clm_${p}`, 'claim'], true)
    }
    s.capacityEnded.putSync(['claims', 3000, 'clm_c', 'claim'], true)
  })
}

t.test('a partition\'s checkpoint reads its own rows by their range, as the whole table filtered would, and a restore replaces only them', async (t) => {
  const from = store(t)
  fill(from, 'a')
  const ranged = [prefixSlice('settled_bids', from.settledBids, 2), prefixSlice('capacity_ended', from.capacityEnded, 2)]
  const scanned = [tableSlice('settled_bids', from.settledBids, ([p]) => p === 2), tableSlice('capacity_ended', from.capacityEnded, ([log]) => log === 2)]
  const checkpoint = readCheckpoint(from, 'PART_2', mark, ranged, 0)
  t.same(checkpoint.tables, readCheckpoint(from, 'PART_2', mark, scanned, 0).tables, 'the same rows as a scan of the whole table')
  t.same(Object.values(checkpoint.tables).map((rows) => rows.length), [1, 1], 'one row of each table, partition 2\'s')
  t.same(readCheckpoint(from, 'CLAIMS', mark, [prefixSlice('capacity_ended', from.capacityEnded, 'claims')], 0).tables.capacity_ended!.map(([key]) => key), [['claims', 3000, 'clm_c', 'claim']], 'the claims log\'s rows by their name')

  const to = store(t)
  fill(to, 'b')
  to.write(() => restoreCheckpoint(to, 'PART_2', checkpoint, [prefixSlice('settled_bids', to.settledBids, 2), prefixSlice('capacity_ended', to.capacityEnded, 2)]))
  t.same([...to.settledBids.getRange()].map(({ key }) => key[3]), ['b', 'a', 'b'], 'partition 2\'s settled bid is the checkpoint\'s, the others stay')
  t.equal([...to.capacityEnded.getRange()].length, 4, 'and its ended row replaced, the others left')
  t.same(to.partitionMarks.get('PART_2'), mark, 'with its mark')
})
