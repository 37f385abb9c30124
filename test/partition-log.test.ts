import { mkdtempSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { Checkpoints } from '../src/cluster/checkpoints.js'
import { FencedCommits } from '../src/cluster/fenced-commits.js'
import { nameMachine } from '../src/cluster/name-claims.js'
import { ensureLogStream, PartitionLog, partitionStream, type PartitionEntry, type PartitionMachine } from '../src/cluster/partition-log.js'
import { createLogger } from '../src/log.js'
import { openStore, type Store } from '../src/store/store.js'
import { fileEngine } from './helpers/engine.js'
import { eventually, pause } from './helpers/eventually.js'

// A partition's log (issue 47's first step) against a real three-member NATS JetStream engine: two nodes, each with
// its own LMDB, apply one partition's stream. Exclusivity is decided in the log's order, a paused owner's late write
// is fenced by the takeover ahead of it, a retried command lands once, and a node never reads on past a gap.

const CAPACITY = 10
const LEASE_MS = 400

/** A screen-day's capacity, booked in the partition's rows (the store's meta table, under this test's keys). */
function bookings (store: Store): PartitionMachine & { booked: () => number } {
  const booked = (): number => (store.meta.get('test:booked') as number | undefined) ?? 0
  return {
    booked,
    apply (body) {
      const { spots } = body as { spots: number }
      if (booked() + spots > CAPACITY) return { status: 'refused', reason: 'capacity_unavailable' }
      store.meta.putSync('test:booked', booked() + spots)
      return { status: 'accepted', result: { booked: booked() } }
    }
  }
}

const engine = await fileEngine(t, 'partition-log')
if (engine !== undefined) {
  const { dir } = engine
  const log = createLogger('error')
  let partition = 0

  /** A node of the test: its own store and connection, following one partition's log. */
  const node = async (t: { teardown (fn: () => unknown): void }, name: string, p: number, start = true) => {
    const nc = await engine.connect()
    const store = openStore(mkdtempSync(join(dir, `${name}-`)))
    const machine = bookings(store)
    const part = new PartitionLog({ js: nc.jetstream(), jsm: await nc.jetstreamManager(), store, stream: partitionStream(p), machine, self: { node: name, incarnation: `${name}-life-1` }, leaseMs: LEASE_MS, ttlMs: 5000, ackTimeoutMs: 5000, log })
    if (start) await part.start()
    t.teardown(async () => { part.stop(); await store.close() })
    return { store, part, machine }
  }
  /** A partition of its own for each test. */
  const fresh = async (): Promise<number> => {
    const p = ++partition
    const nc = await engine.connect()
    await ensureLogStream(await nc.jetstreamManager(), partitionStream(p), 3)
    return p
  }

  t.test('two bookings that do not both fit: the first in the log wins, and both nodes decide the same', async (t) => {
    const p = await fresh()
    const a = await node(t, 'node-a', p)
    const b = await node(t, 'node-b', p)
    const [va, vb] = await Promise.all([a.part.propose('booking-a', { spots: 6 }, false, 5000), b.part.propose('booking-b', { spots: 6 }, false, 5000)])
    t.same([va?.status, vb?.status].sort(), ['accepted', 'refused'], 'one accepted, one refused')
    t.equal([va, vb].find((v) => v?.status === 'refused')?.reason, 'capacity_unavailable')
    await eventually(t, 'both nodes applied both', () => Math.min(a.part.mark().applied, b.part.mark().applied), { until: (n) => n >= 2 })
    t.equal(a.machine.booked(), 6, 'node-a booked 6 of 10')
    t.equal(b.machine.booked(), 6, 'node-b too: the same rows from the same log')
    t.same(a.part.outcomeOf('booking-a'), b.part.outcomeOf('booking-a'), 'and the same verdict of each')
  })

  t.test('a retried command lands once; one that lands past its time to live takes nothing and leaves its key free', async (t) => {
    const p = await fresh()
    const a = await node(t, 'node-a', p)
    const first = await a.part.propose('booking-1', { spots: 3 }, false, 5000)
    const again = await a.part.propose('booking-1', { spots: 3 }, false, 5000)
    t.same(again, first, 'the retry answers the first outcome')
    t.equal(a.machine.booked(), 3, 'booked once')
    const late: PartitionEntry = { t: 'cmd', key: 'booking-2', fenced: false, epoch: 0, node: 'node-a', incarnation: 'node-a-life-1', proposed_at: Date.now() - 60_000, body: { spots: 3 } }
    const seq = await a.part.append(late)
    t.match(await a.part.verdictAt(seq, 'booking-2', 5000), { status: 'refused', reason: 'late' }, 'a publish that landed a minute late is refused')
    t.equal(a.machine.booked(), 3, 'and took nothing')
    t.match(await a.part.propose('booking-2', { spots: 3 }, false, 5000), { status: 'accepted' }, 'its key is still free for a retry')
    t.equal(await a.part.verdictAt(seq, 'another-key', 100), undefined, 'an acknowledgement naming another command\'s entry gives no verdict')
    // The node's wall clock moved a minute back: its commands are stamped in log time, from the head it has seen.
    const realNow = Date.now
    Date.now = () => realNow() - 60_000
    try {
      t.match(await a.part.propose('booking-3', { spots: 1 }, false, 5000), { status: 'accepted' }, 'a node whose clock is a minute behind still books')
    } finally {
      Date.now = realNow
    }
  })

  t.test('an owner paused past its lease: its write lands after the takeover and is refused on every node', async (t) => {
    const p = await fresh()
    const a = await node(t, 'node-a', p)
    const b = await node(t, 'node-b', p)
    t.ok(await a.part.takeOver(5000), 'node-a owns epoch 1')
    t.match(await a.part.propose('spot-1', { spots: 1 }, true, 5000), { status: 'accepted' }, 'its fenced command is accepted')
    await a.part.beat()
    await eventually(t, 'node-b applied node-a\'s beat', () => b.part.mark().applied, { until: (n) => n >= a.part.mark().applied })
    t.notOk(await b.part.takeOver(5000), 'a takeover within the lease, counted in log time, is refused')
    // node-a decides its next spot, then pauses (SIGSTOP) before its write reaches the engine.
    const held: PartitionEntry = { t: 'cmd', key: 'spot-2', fenced: true, epoch: a.part.mark().epoch, node: 'node-a', incarnation: 'node-a-life-1', proposed_at: Date.now(), body: { spots: 1 } }
    await pause(LEASE_MS + 200)
    t.ok(await b.part.takeOver(5000), 'past the lease node-b owns epoch 2')
    t.ok(b.part.owns(), 'and serves it, having applied through its takeover')
    const seq = await a.part.append(held)
    t.match(await a.part.verdictAt(seq, 'spot-2', 5000), { status: 'refused', reason: 'fenced' }, 'node-a wakes: its write is refused, so it never answers done')
    t.match(await b.part.verdictAt(seq, 'spot-2', 5000), { status: 'refused', reason: 'fenced' }, 'node-b decided the same')
    t.notOk(a.part.owns(), 'node-a knows it no longer owns the partition')
    t.equal(a.machine.booked(), 1, 'only the accepted spot is in node-a\'s rows')
    t.equal(b.machine.booked(), 1, 'and in node-b\'s')
    t.same(a.part.mark(), b.part.mark(), 'both nodes hold the same mark: epoch, owner, log time, applied')
    t.match(await b.part.propose('spot-2', { spots: 1 }, true, 5000), { status: 'accepted' }, 'the fenced key is free for the new owner')
  })

  t.test('a fresh command (a spot\'s settlement): its verdict reaches its proposer alone, no key or verdict is kept, and a paused owner\'s is fenced', async (t) => {
    const p = await fresh()
    const a = await node(t, 'node-a', p)
    const b = await node(t, 'node-b', p)
    t.ok(await a.part.takeOver(5000), 'node-a owns epoch 1')
    const rows = (store: Store) => [...store.partitionVerdicts.getKeys()].length + [...store.partitionKeys.getKeys()].length
    await eventually(t, 'node-b applied the takeover', () => b.part.mark().applied, { until: (n) => n >= a.part.mark().applied })
    const before = [rows(a.store), rows(b.store)]
    t.match(await a.part.propose('stl_1', { spots: 1 }, true, 5000, true), { status: 'accepted' }, 'accepted from the owner')
    await eventually(t, 'node-b applied it', () => b.machine.booked(), { until: (n) => n === 1 })
    t.same([rows(a.store), rows(b.store)], before, 'neither node stores its verdict or key: its key is new, and only its proposer waits')
    t.match(await b.part.propose('stl_2', { spots: 1 }, true, 5000, true), { status: 'refused', reason: 'fenced' }, 'from a node that does not own the partition, refused')
    const held: PartitionEntry = { t: 'cmd', key: 'stl_3', fenced: true, fresh: true, epoch: a.part.mark().epoch, node: 'node-a', incarnation: 'node-a-life-1', proposed_at: Date.now(), body: { spots: 1 } }
    await pause(LEASE_MS + 200)
    t.ok(await b.part.takeOver(5000), 'past the lease node-b owns epoch 2')
    const seq = await a.part.append(held)
    t.match(await a.part.verdictAt(seq, 'stl_3', 5000), { status: 'refused', reason: 'fenced' }, 'node-a, woken, is told its settlement did not count')
    t.equal(b.machine.booked(), 1, 'and node-b\'s rows never counted it')
  })

  t.test('a node never reads on past a gap: entries trimmed past its mark, or the stream created again', async (t) => {
    const p = await fresh()
    const a = await node(t, 'node-a', p)
    for (let i = 0; i < 3; i++) await a.part.propose(`booking-${i}`, { spots: 1 }, false, 5000)
    const nc = await engine.connect()
    const jsm = await nc.jetstreamManager()
    await jsm.streams.purge(partitionStream(p), { seq: 3 })
    const late = await node(t, 'node-c', p, false)
    await t.rejects(late.part.start(), { name: 'PartitionGap' }, 'a node that applied nothing cannot start at entry 3')
    a.part.stop()
    await jsm.streams.delete(partitionStream(p))
    await ensureLogStream(jsm, partitionStream(p), 3)
    const again = new PartitionLog({ js: nc.jetstream(), jsm, store: a.store, stream: partitionStream(p), machine: a.machine, self: { node: 'node-a', incarnation: 'node-a-life-2' }, leaseMs: LEASE_MS, ttlMs: 5000, ackTimeoutMs: 5000, log })
    await t.rejects(again.start(), { name: 'PartitionGap' }, 'a stream created again is not read on from the old mark')
  })

  t.test('the owner checkpoints the log and trims it; a node that joins later, or was away past a trim, reads on from the checkpoint and decides alike', async (t) => {
    const p = await fresh()
    const nc = await engine.connect()
    const jsm = await nc.jetstreamManager()
    const bucket = await nc.jetstream().views.os(`test_checkpoints_${p}`, { replicas: 3 })
    const checkpoints = { store: new Checkpoints(bucket, jsm, 10_000), every: 10 }
    /** A node of the names' log (its rows are its own tables, so it is checkpointed). */
    const namesNode = async (name: string, life: number, dataDir = mkdtempSync(join(dir, `${name}-`))) => {
      const store = openStore(dataDir)
      const part = new PartitionLog({ js: nc.jetstream(), jsm, store, stream: partitionStream(p), machine: nameMachine(store, new FencedCommits({ store, onApplied: () => {}, writer: 'data-1' })), self: { node: name, incarnation: `${name}-life-${life}` }, leaseMs: LEASE_MS, ttlMs: 5000, ackTimeoutMs: 5000, log, checkpoints })
      await part.start()
      let closed = false
      /** The node stops, its data directory kept. */
      const leave = async () => {
        if (closed) return
        closed = true
        part.stop()
        await store.close()
      }
      t.teardown(leave)
      return { store, part, dataDir, leave }
    }
    const claim = async (on: { part: PartitionLog }, name: string, owner: string) => await on.part.propose(`claim:${name}:${owner}`, { op: 'claim', name, owner }, false, 5000)
    const claims = (store: Store) => [...store.nameClaims.getRange()].map(({ key, value }) => [key, value.owner, value.lapses_at])
    const a = await namesNode('node-a', 1)
    t.ok(await a.part.takeOver(5000), 'node-a owns the log')
    const b = await namesNode('node-b', 1)
    for (let i = 0; i < 5; i++) t.match(await claim(a, `n${i}`, 'r1'), { status: 'accepted' })
    await eventually(t, 'node-b applied the first claims', () => b.part.mark().applied, { until: (n) => n >= a.part.mark().applied })
    await b.leave()
    for (let i = 5; i < 35; i++) t.match(await claim(a, `n${i}`, 'r1'), { status: 'accepted' })
    const first = await eventually(t, 'the log trimmed below a checkpoint', async () => (await jsm.streams.info(partitionStream(p))).state.first_seq, { until: (n) => n > 10 })
    t.ok(first > b.part.mark().applied + 1, `the log starts at entry ${first}, past node-b's mark (${b.part.mark().applied})`)
    const c = await namesNode('node-c', 1)
    await eventually(t, 'node-c, joining after the trim, caught up', () => c.part.mark().applied, { until: (n) => n >= a.part.mark().applied })
    t.same(claims(c.store), claims(a.store), `node-c holds node-a's ${claims(a.store).length} claims`)
    const back = await namesNode('node-b', 2, b.dataDir)
    await eventually(t, 'node-b, back after the trim, caught up', () => back.part.mark().applied, { until: (n) => n >= a.part.mark().applied })
    t.same(claims(back.store), claims(a.store), 'and so does node-b, away while the log was trimmed past it')
    const refused = await claim(c, 'n3', 'r2')
    t.match(refused, { status: 'refused', reason: 'held' }, 'a claim of a name held before the checkpoint is refused through node-c')
    await eventually(t, 'node-a and node-b applied it', () => Math.min(a.part.mark().applied, back.part.mark().applied), { until: (n) => n >= c.part.mark().applied })
    t.same([a.part.outcomeOf('claim:n3:r2'), back.part.outcomeOf('claim:n3:r2')], [refused, refused], 'and decided alike by every node')
    t.same(back.part.mark(), a.part.mark(), 'all three hold the same mark')
    // The object store keeps a record (its meta subject) of every object removed, unless it is purged.
    const { bucket: name, streamInfo } = await bucket.status()
    const records = Object.keys((await jsm.streams.info(streamInfo.config.name, { subjects_filter: `$O.${name}.M.>` })).state.subjects ?? {})
    t.ok(records.length <= 2, `the engine holds the records of the last two checkpoints and of none removed: ${records.length} records, ${(await bucket.list()).map((o) => o.name).join(', ')} listed`)
  })
}
