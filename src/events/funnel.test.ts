import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { dropShipped, FunnelLog } from './funnel.js'
import { openStore } from '../store/store.js'

// The funnel log's size is what /metrics and /readyz report; past 100k waiting events it is a running count, since
// counting keys on every scrape would stall the event loop for seconds during a long ClickHouse outage.

t.test('size() follows appends, rollbacks and shipped batches, large backlog or small', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'oohbid-funnel-'))
  const store = openStore(dir)
  t.teardown(async () => { await store.close(); rmSync(dir, { recursive: true, force: true }) })
  const log = new FunnelLog(store)
  const at = Date.now()
  const append = (n: number) => store.write(() => { for (let i = 0; i < n; i++) log.append({ stage: 'request', at, seat_id: 's', sandbox: false, screens: ['scr_1'] }) })
  for (let k = 0; k < 15; k++) append(10_000)
  t.equal(log.size(), 150_000)
  t.throws(() => store.write(() => { log.append({ stage: 'request', at, seat_id: 's', sandbox: false, screens: [] }); throw new Error('rollback') }))
  t.equal(log.size(), 150_000, 'a rolled-back append is not counted')
  // What the analytics process does with a batch: delete it, then report it.
  const [hundredThousandth] = [...store.funnel.getKeys({ offset: 99_999, limit: 1 })] as number[]
  store.write(() => dropShipped(store, hundredThousandth!))
  log.shipped(100_000)
  t.equal(log.size(), 50_000)
  t.equal(store.funnel.getCount(), 50_000, 'the same as counting the keys')
  t.equal(new FunnelLog(store).size(), 50_000, 'a restart counts what waits')
})
