import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { openStore } from '../store/store.js'
import { LOG_STOPPED, replicationChecks } from './readiness.js'
import { monotonicMs, ServedPartitions } from './served-partitions.js'

// A cluster node's /readyz: ready while it follows every log, with how far it has shipped and applied; not ready once
// it stopped following one (the engine lost entries it had applied), until a restart rebuilds it.

t.test('a node that stopped following a log is not ready, and says which and why', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'oohbid-readiness-'))
  const store = openStore(dir, undefined, undefined, { replicate: true })
  t.teardown(async () => { await store.close(); rmSync(dir, { recursive: true, force: true }) })
  const served = new ServedPartitions(16)
  const readiness = replicationChecks('node-1', store, served)
  t.match(readiness(), { checks: { cluster: /^node-1: 0 transactions waiting to ship/ } }, 'ready, with its replication')
  t.equal(readiness().unready, undefined)
  t.equal(readiness().checks.logs, 'node-1 owns 0 of the 0 logs it follows')
  store.write(() => {
    const mark = { stream_created: 'c', applied: 3, digest: '', log_time: 1, last_beat_at: 1 }
    store.partitionMarks.putSync('PART_0', { ...mark, epoch: 2, owner: { node: 'node-1', incarnation: 'a' } })
    store.partitionMarks.putSync('PART_1', { ...mark, epoch: 5, owner: { node: 'node-2', incarnation: 'b' } })
    store.partitionMarks.putSync('PART_2', { ...mark, epoch: 1 })
  })
  t.equal(readiness().checks.logs, 'node-1 owns 1 of the 3 logs it follows: PART_0@2', 'which logs it owns, and under which epoch')
  t.equal(readiness().checks.spots, 'node-1 decides the spots of 0 of the 16 partitions', 'no spots until a partition\'s bids are read')
  served.set(0, monotonicMs() + 60_000, true)
  served.set(7, monotonicMs() + 60_000, true)
  t.equal(readiness().checks.spots, 'node-1 decides the spots of 2 of the 16 partitions: 0, 7', 'then those partitions\'')
  served.set(7, monotonicMs() - 1, true)
  t.equal(readiness().checks.spots, 'node-1 decides the spots of 1 of the 16 partitions: 0', 'not one whose lease has run out')
  store.write(() => store.meta.putSync(LOG_STOPPED, 'PART_3: entry 9 is not the one this node applied'))
  t.match(readiness().unready, /node-1 stopped following a log \(PART_3: entry 9 is not the one this node applied\)/, 'not ready once a log stopped')
})

t.test('a node alone adds nothing', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'oohbid-readiness-'))
  const store = openStore(dir)
  t.teardown(async () => { await store.close(); rmSync(dir, { recursive: true, force: true }) })
  t.same(replicationChecks('alone', store, new ServedPartitions(1))(), { checks: {} })
})
