import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { openBackend } from './backends.js'
import { ClickHouseSink } from './load.js'
import { ddl } from './schema.js'
import { Shipper } from './shipper.js'
import { countLogged, dropAllShipped, FunnelLog } from '../events/funnel.js'
import { createLogger } from '../log.js'
import { openStore } from '../store/store.js'

t.test('a batch whose deletion failed is shipped again, and ClickHouse holds each event once', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'oohbid-shipper-'))
  const store = openStore(dir)
  const backend = await openBackend({ dataDir: dir })
  t.teardown(async () => { await backend.close(); await store.close(); rmSync(dir, { recursive: true, force: true }) })
  const target = { database: 'shipper_test' }
  for (const statement of ddl(target)) await backend.exec(statement)
  const log = new FunnelLog(store)
  const at = Date.now()
  store.write(() => { for (let i = 0; i < 30; i++) log.append({ stage: 'request', at, seat_id: 's', sandbox: false, screens: [`scr_${i}`] }) })

  // The service answers the first deletion with an error (its write failed), as src/analytics/client.ts relays it.
  let asked = 0
  const drop = async (last: number) => {
    if (++asked === 1) throw new Error('deleting shipped events: MDB_MAP_FULL')
    await dropAllShipped(store, last)
  }
  let reported = 0
  const shipper = new Shipper(store, new ClickHouseSink(backend, target, () => undefined), createLogger('error', () => {}), 0, drop, (count) => { reported += count })
  await t.rejects(shipper.shipOnce(), /MDB_MAP_FULL/, 'the failed deletion fails the batch')
  t.equal(reported, 0, 'and nothing is reported shipped')
  store.refresh()
  t.equal(countLogged(store), 30, 'its events still wait in the log')
  t.equal(await shipper.shipOnce(), 30, 'the next batch ships them again')
  t.equal(reported, 30)
  store.refresh()
  t.equal(countLogged(store), 0, 'and deletes them')
  t.same(await backend.query('SELECT count() AS n, uniqExact(event_id) AS ids FROM shipper_test.bid_requests'), [{ n: 30, ids: 30 }], 'each event is in ClickHouse once')
})
