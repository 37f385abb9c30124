import { mkdtempSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import type { SeatRecord } from '../src/accounts/records.js'
import { ChangeApplier } from '../src/cluster/applier.js'
import { connectEngine, STATE_BUCKET, type Engine } from '../src/cluster/engine.js'
import { packValue, stateKey } from '../src/cluster/state-keys.js'
import { createLogger } from '../src/log.js'
import { openStore, type Store } from '../src/store/store.js'
import { fileEngine } from './helpers/engine.js'
import { eventually, pause } from './helpers/eventually.js'

// A cluster node's applier (src/cluster/applier.ts) against a real three-member engine, where a row this node changed
// is changed by another node too while this node's acknowledgement is still on its way (issue 47: the applier dropped
// the newer value for good, and the nodes diverged). No shipper runs here: the test publishes what this node's shipper
// would have, and leaves its change waiting, as an acknowledgement not yet taken does.

const engine = await fileEngine(t, 'applier')
if (engine !== undefined) {
  const log = createLogger('error')
  const cluster = { natsUrls: engine.urls, nodeId: 'node-a', replicas: 3, ackTimeoutMs: 5000, partitions: 16, funnelKeepHours: 1, checkpointEntries: 10_000, bookKeepMs: 600_000 }
  const e: Engine = await connectEngine(cluster, log)
  t.teardown(() => e.close())
  const store: Store = openStore(mkdtempSync(join(engine.dir, 'node-a-')), undefined, undefined, { replicate: true })
  const applier = new ChangeApplier({ store, changes: store.changes!, log, incarnation: 'node-a-1', partitions: 16, onApplied: () => {}, onServing: () => {}, onForget: () => {} })
  t.teardown(async () => { applier.stop(); await store.close() })
  await applier.start(e)
  const seat = (name: string) => ({ seat_id: 's1', company_name: name }) as unknown as SeatRecord
  const publish = async (value: unknown) => await e.js.publish(`$KV.${STATE_BUCKET}.${stateKey('seats', 's1')}`, packValue(value))
  const shown = () => { store.refresh(); return store.seats.get('s1') as { company_name?: string } | undefined }

  t.test('another node\'s change landing after this node\'s unacknowledged one is applied: it is the newer', async (t) => {
    store.write(() => store.seats.putSync('s1', seat('node-a\'s')))
    t.equal(store.changes!.waiting, 1, 'node-a\'s change waits for its acknowledgement')
    await publish(seat('node-a\'s'))
    await publish(seat('node-b\'s'))
    const last = await eventually(t, 'node-a shows node-b\'s value, the bucket\'s last', shown, { within: 20_000, until: (s) => s?.company_name === 'node-b\'s' })
    t.equal(last?.company_name, 'node-b\'s', 'node-a converges on the bucket\'s last value while its own change still waits')
    store.write(() => store.changes!.shipped(store.changes!.recorded))
  })

  t.test('another node\'s change landing before this node\'s is skipped: this node\'s, later in the bucket, wins', async (t) => {
    store.write(() => store.seats.putSync('s1', seat('node-a\'s second')))
    await publish(seat('node-b\'s second'))
    await pause(300)
    t.equal(shown()?.company_name, 'node-a\'s second', 'node-b\'s older value does not undo node-a\'s for a moment')
    await publish(seat('node-a\'s second'))
    await publish(seat('node-c\'s'))
    t.equal((await eventually(t, 'the newest after node-a\'s own', shown, { within: 20_000, until: (s) => s?.company_name === 'node-c\'s' }))?.company_name, 'node-c\'s', 'and what lands after node-a\'s own is applied')
  })
}
