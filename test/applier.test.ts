import { mkdtempSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import type { SeatRecord } from '../src/accounts/records.js'
import { ChangeApplier } from '../src/cluster/applier.js'
import { FencedCommits } from '../src/cluster/fenced-commits.js'
import { bookSubject } from '../src/cluster/book-parts.js'
import { connectEngine, STATE_BUCKET, type Engine } from '../src/cluster/engine.js'
import { partitionOf } from '../src/cluster/screen-partitions.js'
import { packValue, stateKey } from '../src/cluster/state-keys.js'
import type { BookKey, StoredBid } from '../src/bidding/records.js'
import { createLogger } from '../src/log.js'
import { openStore, type Store } from '../src/store/store.js'
import { fileEngine } from './helpers/engine.js'
import { eventually, pause } from './helpers/eventually.js'

// A cluster node's applier (src/cluster/applier.ts) against a real three-member engine, where a row this node changed
// is changed by another node too while this node's acknowledgement is still on its way (issue 47: the applier dropped
// the newer value for good, and the nodes diverged); and the bids of the partitions it holds, each partition's from a
// subject of its own (src/cluster/partition-books.ts). No shipper runs here: the test publishes what this node's
// shipper would have, and leaves its change waiting, as an acknowledgement not yet taken does.

const engine = await fileEngine(t, 'applier')
if (engine !== undefined) {
  const log = createLogger('error')
  const cluster = { natsUrls: engine.urls, nodeId: 'node-a', replicas: 3, ackTimeoutMs: 5000, lingerMs: 5, partitions: 16, funnelKeepHours: 1, checkpointEntries: 10_000, bookKeepMs: 600_000 }
  const e: Engine = await connectEngine(cluster, log)
  t.teardown(() => e.close())
  const store: Store = openStore(mkdtempSync(join(engine.dir, 'node-a-')), undefined, undefined, { replicate: true })
  const serving = new Set<number>()
  const applier = new ChangeApplier({ store, changes: store.changes!, log, node: 'node-a', incarnation: 'node-a-1', partitions: 16, onApplied: () => {}, onServing: (p, on) => { if (on) serving.add(p); else serving.delete(p) }, onForget: () => {}, fenced: new FencedCommits({ store, onApplied: () => {}, writer: 'data-1' }), repair: () => {} })
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

  t.test('a row the names\' log decides (written under a record\'s lock) is not taken from the state bucket: a refused writer\'s put lands there too', async (t) => {
    store.write(() => store.changes!.applying(() => {
      store.seats.putSync('s2', seat('the lock holder\'s'))
      store.fencedRows.putSync(stateKey('seats', 's2'), { value: seat('the lock holder\'s') })
    }))
    await e.js.publish(`$KV.${STATE_BUCKET}.${stateKey('seats', 's2')}`, packValue(seat('a paused writer\'s')))
    await publish(seat('marker'))
    await eventually(t, 'the bucket applied past the paused writer\'s put', shown, { within: 20_000, until: (s) => s?.company_name === 'marker' })
    t.equal((store.seats.get('s2') as { company_name?: string } | undefined)?.company_name, 'the lock holder\'s', 'the names\' log\'s value stands')
  })

  // The bids: a partition's messages from every node on its subject (book-parts.ts), this node's own named by its
  // incarnation with the last of its changes the round carried, as its shipper names them.
  const screens = Array.from({ length: 64 }, (_, i) => `book-screen-${i}`)
  const held = partitionOf(screens[0]!, 16)
  const mine = screens.filter((s) => partitionOf(s, 16) === held)
  const other = screens.find((s) => partitionOf(s, 16) !== held)!
  const key = (screen: string): BookKey => [screen, 'tag', 'seat']
  const bid = (screen: string, price: number) => ({ bid_id: `b-${screen}-${price}`, price }) as unknown as StoredBid
  let round = 0
  const ship = async (from: string, screen: string, price: number, through = 0) => {
    const id = from === 'node-a-1' ? `node-a-1.${through}-${through}.${partitionOf(screen, 16)}.0` : `${from}.${++round}-${round}.${partitionOf(screen, 16)}.0`
    await e.js.publish(bookSubject(partitionOf(screen, 16), from.slice(0, 6)), packValue([['bids', key(screen), bid(screen, price)]]), { msgID: id })
  }
  const price = (screen: string) => { store.refresh(); return (store.bids.get(key(screen)) as { price?: number } | undefined)?.price }

  t.test('a node holding a partition reads its bids from the stream\'s start, serves it once read, and never gets another partition\'s', async (t) => {
    await ship('node-b-1', mine[0]!, 1)
    await ship('node-b-1', other, 1)
    await ship('node-c-1', mine[1]!, 2)
    t.notOk(serving.has(held), 'not served before it is held')
    applier.hold(e, held)
    await eventually(t, 'the partition served', () => serving.has(held), { within: 20_000, until: (on) => on })
    t.equal(price(mine[0]!), 1, 'a bid shipped before the partition was held, by one node')
    t.equal(price(mine[1]!), 2, 'and by another')
    await ship('node-b-1', mine[0]!, 3)
    await ship('node-b-1', other, 3)
    await eventually(t, 'a bid shipped since applied', () => price(mine[0]!), { within: 20_000, until: (p) => p === 3 })
    await pause(200)
    t.equal(price(other), undefined, 'another partition\'s bids never reach it')
  })

  t.test('this node\'s own round coming back does not bring back a bid it has taken out since without shipping (a spot\'s)', async (t) => {
    store.write(() => store.bids.putSync(key(mine[2]!), bid(mine[2]!, 5)))
    const change = store.changes!.recorded
    await ship('node-a-1', mine[2]!, 5, change)
    store.write(() => store.changes!.shipped(change))
    store.write(() => store.share.ownCopy(store, () => store.bids.removeSync(key(mine[2]!))))
    await ship('node-b-1', mine[3]!, 6)
    await eventually(t, 'a later message applied', () => price(mine[3]!), { within: 20_000, until: (p) => p === 6 })
    t.equal(price(mine[2]!), undefined, 'the bid taken out stays out')
  })

  t.test('another node\'s bid landing after this node\'s own, whose acknowledgement is still on its way, is applied: it is the newer', async (t) => {
    store.write(() => store.bids.putSync(key(mine[4]!), bid(mine[4]!, 7)))
    const change = store.changes!.recorded
    await ship('node-a-1', mine[4]!, 7, change)
    await ship('node-b-1', mine[4]!, 8)
    t.equal((await eventually(t, 'node-b\'s bid', () => price(mine[4]!), { within: 20_000, until: (p) => p === 8 })), 8, 'node-b\'s, the stream\'s last, while node-a\'s change still waits')
    store.write(() => store.changes!.shipped(store.changes!.recorded))
  })

  t.test('this node\'s bid shipped while it took the partition on, acknowledged before the reading reached its older one, is not undone by it', async (t) => {
    const fresh = screens.filter((s) => partitionOf(s, 16) !== held)
    const p = partitionOf(fresh[0]!, 16)
    const same = fresh.filter((s) => partitionOf(s, 16) === p)
    // The older value, shipped and acknowledged, behind many messages the reading applies first.
    store.write(() => store.bids.putSync(key(same[0]!), bid(same[0]!, 1)))
    const first = store.changes!.recorded
    for (let i = 0; i < 20; i++) await Promise.all(Array.from({ length: 100 }, (_, j) => ship('node-b-1', same[1 + ((i * 100 + j) % (same.length - 1))]!, i * 100 + j)))
    await ship('node-a-1', same[0]!, 1, first)
    store.write(() => store.changes!.shipped(first))
    // The newer value waits to ship as the partition is taken on, lands past its head, and is acknowledged at once.
    store.write(() => store.bids.putSync(key(same[0]!), bid(same[0]!, 2)))
    const second = store.changes!.recorded
    applier.hold(e, p)
    await pause(30)
    await ship('node-a-1', same[0]!, 2, second)
    store.write(() => store.changes!.shipped(second))
    applier.landing([[['bids', key(same[0]!), bid(same[0]!, 2)], second]])
    await eventually(t, 'the partition served', () => serving.has(p), { within: 20_000, until: (on) => on })
    t.equal(price(same[0]!), 2, 'the newer bid stands')
    applier.release(p)
  })

  t.test('released, the partition is no longer served and its bids no longer applied', async (t) => {
    applier.release(held)
    t.notOk(serving.has(held), 'not served')
    await ship('node-b-1', mine[0]!, 9)
    await pause(300)
    t.equal(price(mine[0]!), 3, 'a bid shipped since is not applied')
  })
}
