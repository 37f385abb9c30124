import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { openStore } from '../store/store.js'
import { addToHour, lastDay } from './hour-stats.js'
import { clusterShare } from '../cluster/share.js'
import { ServedPartitions } from '../cluster/served-partitions.js'

// A seat's hourly counters over a real LMDB store, without the service: each node writes its own row of an hour,
// and the day sums every node's rows and a row an earlier version wrote without a node.

const NOW = Date.parse('2026-11-27T15:30:00Z')
const HOUR = Math.floor(NOW / 3_600_000) * 3_600_000

t.test('a seat\'s hour is the sum of every node\'s row, an earlier version\'s row without a node included', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'oohbid-stats-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  for (const node of ['node-1', 'node-2']) {
    const store = openStore(dir, undefined, undefined, { share: clusterShare(node, new ServedPartitions(1), { leasedLeft: () => 0, ask: () => {} }) })
    store.write(() => addToHour(store, 'Alpha', NOW, (h) => { h.bids += 2; h.accepted += 1; h.wins += node === 'node-2' ? 1 : 0; h.rejected.below_floor = 1 }))
    await store.close()
  }
  const store = openStore(dir)
  t.teardown(() => store.close())
  store.write(() => store.stats.putSync(['alpha', HOUR], { bid_responses: 1, bids: 1, accepted: 1, rejected: {}, wins: 0, spend_usd: 0, accepted_cpm_sum: 4, win_cpm_sum: 0, latency_ms_sum: 0, latency_max_ms: 0 }))
  t.same([...store.stats.getKeys()], [['alpha', HOUR], ['alpha', HOUR, 'node-1'], ['alpha', HOUR, 'node-2']], 'one row a node, beside the old one')
  const day = lastDay(store, 'alpha', NOW)
  t.match(day, { bids: 5, accepted: 3, wins: 1, rejected_by_reason: { below_floor: 2 } }, 'the day sums them')
  t.match(day.hourly[day.hourly.length - 1], { bids: 5, accepted: 3, wins: 1 }, 'and so does the hour')
  t.match(lastDay(store, 'alpha', NOW + 3_600_000).hourly.slice(-2), [{ bids: 5 }, { bids: 0 }], 'the next hour starts from nothing')
})
