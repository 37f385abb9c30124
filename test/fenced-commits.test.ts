import { mkdtempSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import type { SeatRecord } from '../src/accounts/records.js'
import { ChangeApplier } from '../src/cluster/applier.js'
import { connectEngine, STATE_BUCKET } from '../src/cluster/engine.js'
import { commitCommand, FencedCommits } from '../src/cluster/fenced-commits.js'
import { NameClaims, nameMachine } from '../src/cluster/name-claims.js'
import { ensureLogStream, PartitionLog } from '../src/cluster/partition-log.js'
import { lockName, LOCK_TTL_MS } from '../src/cluster/record-locks.js'
import { ShippedChanges } from '../src/cluster/shipped.js'
import { ChangeShipper } from '../src/cluster/shipper.js'
import { RowVersions } from '../src/cluster/row-versions.js'
import { packStamped, stateKey, unpackEntry } from '../src/cluster/state-keys.js'
import type { ScreenRecord } from '../src/inventory/records.js'
import { systemClock } from '../src/clock.js'
import { createLogger } from '../src/log.js'
import { Outbox } from '../src/store/outbox.js'
import type { Fence } from '../src/store/changes.js'
import { openStore } from '../src/store/store.js'
import { fileEngine } from './helpers/engine.js'
import { eventually, pause } from './helpers/eventually.js'

// Writes under a record's lock against a real three-member engine (issue 47): two nodes, each with its own LMDB, its
// names' log and its shipper, as src/cluster/node.ts wires them. A node that wrote under a lock and then stopped
// shipping for longer than the lock lives (paused, cut off) finds, once it ships, that another request took the lock
// over and wrote meanwhile: its write is refused in the log, on every node, and put back in its own tables; the
// request waiting on it reads the refusal. Nothing here is timed: the shipper of the "paused" node is simply not
// kicked until the other node has written.

const engine = await fileEngine(t, 'fenced-commits')
if (engine !== undefined) {
  const log = createLogger('error')
  const STREAM = 'NAMES_TEST'
  const seat = (status: string) => ({ seat_id: 's1', status }) as unknown as SeatRecord

  const node = async (name: string) => {
    const store = openStore(mkdtempSync(join(engine.dir, `${name}-`)), undefined, undefined, { replicate: true })
    const e = await connectEngine({ natsUrls: engine.urls, nodeId: name, replicas: 3, ackTimeoutMs: 5000, lingerMs: 0, partitions: 16, funnelKeepHours: 1, checkpointEntries: 10_000, bookKeepMs: 600_000 }, log)
    const commits = new FencedCommits({ store, onApplied: () => {}, writer: `${name}-data` })
    await ensureLogStream(e.jsm, STREAM, 3)
    const names = new PartitionLog({ js: e.js, jsm: e.jsm, store, stream: STREAM, machine: nameMachine(store, commits), self: { node: name, incarnation: `${name}-life` }, leaseMs: 10_000, ttlMs: 30_000, ackTimeoutMs: 5000, log })
    await names.start()
    const shipped = new ShippedChanges()
    const outbox = new Outbox(store, systemClock)
    const shipper = new ChangeShipper({
      store,
      changes: store.changes!,
      engine: e,
      node: name,
      incarnation: `${name}-data`,
      partitions: 16,
      lingerMs: 0,
      log,
      onShipped: (through) => shipped.advance(through),
      release: (events) => outbox.release(events),
      beforeShip: async () => {},
      fenced: commits,
      commit: async (key, body, at) => await names.propose(key, body, false, 5000, false, at).catch(() => undefined),
      logNow: () => names.now()
    })
    const claims = new NameClaims(async (key, body) => await names.propose(key, body, false, 5000).catch(() => undefined), log, 5000)
    const applier = new ChangeApplier({ store, changes: store.changes!, log, node: name, incarnation: `${name}-data`, partitions: 16, onApplied: () => {}, onServing: () => {}, onForget: () => {}, fenced: commits, repair: (kvKey) => shipper.repair(kvKey) })
    await applier.start(e)
    t.teardown(async () => {
      applier.stop()
      names.stop()
      await shipper.idle()
      await e.close()
      await store.close()
    })
    const shown = (id = 's1'): string | undefined => {
      store.refresh()
      return store.seats.get(id)?.status
    }
    /** Writes under a fence (as a request holding a record's lock does); the seq it recorded. */
    const write = (fence: Fence | undefined, fn: () => void): number => {
      const run = (): void => store.write(fn)
      if (fence === undefined) run()
      else store.changes!.fenced(fence, run)
      return store.changes!.recorded
    }
    /** Ships what waits, and resolves once seq is decided. */
    const ship = async (seq: number): Promise<void> => {
      shipper.kick()
      t.ok(await shipped.wait(seq, 15_000), `${name} shipped through ${seq}`)
      store.refresh()
    }
    const screen = (id: string): string | undefined => {
      store.refresh()
      return store.screens.get(id)?.name
    }
    /** The events this node's outbox holds for its subscribers, by type. */
    const events = (): string[] => {
      store.refresh()
      return [...store.outbox.getRange()].map(({ value }) => `${value.type} ${value.subject}`)
    }
    return { store, e, names, claims, shipper, applier, outbox, shown, screen, write, ship, events, refused: (seq: number) => store.fencedRefusals.get(seq)?.reason }
  }

  const a = await node('node-a')
  const b = await node('node-b')
  const lock = lockName('seat:s1')

  t.test('a write under a lock that lost it while its node did not ship is refused on every node and put back on its own', async (t) => {
    t.ok(await a.claims.claim(lock, 'req_a', LOCK_TTL_MS), 'node-a\'s request takes the seat\'s lock')
    const fenceA: Fence = { name: lock, owner: 'req_a', seqs: [] }
    const seqA = a.write(fenceA, () => {
      a.store.seats.putSync('s1', seat('suspended by a'))
      a.store.seats.putSync('s9', seat('made by a'))
    })
    t.equal(a.shown(), 'suspended by a', 'node-a wrote it in its own tables, and then stops shipping (paused)')
    await pause(20)
    // The lock is 30 s old for node-b's claim (taken over at once here): the paused holder is over.
    t.ok(await b.claims.claim(lock, 'req_b', 0), 'node-b\'s request takes the lock over')
    const fenceB: Fence = { name: lock, owner: 'req_b', seqs: [] }
    const seqB = b.write(fenceB, () => b.store.seats.putSync('s1', seat('approved by b')))
    await b.ship(seqB)
    t.equal(b.refused(seqB), undefined, 'node-b\'s write under the lock it holds counts')
    await eventually(t, 'node-a applies node-b\'s write from the log', () => a.shown(), { within: 10_000, until: (s) => s === 'approved by b' })

    await a.ship(seqA)
    t.equal(a.refused(seqA), 'lock_lost', 'node-a\'s write, landing after the takeover, is refused; its request reads why')
    t.same(fenceA.seqs, [seqA])
    t.equal(a.shown(), 'approved by b', 'node-a holds node-b\'s value again')
    t.equal(a.shown('s9'), undefined, 'and not the row its refused write made')
    t.equal(b.shown(), 'approved by b', 'node-b never saw node-a\'s')
    t.equal(b.shown('s9'), undefined)
    t.equal(a.store.changes!.waiting, 0, 'nothing of the refused write waits to ship')
  })

  t.test('the events a write under a lock raised reach the outbox once the log accepts it, and never when it refuses it', async (t) => {
    const lockE = lockName('seat:s7')
    t.ok(await a.claims.claim(lockE, 'req_e', LOCK_TTL_MS))
    const before = a.events().length
    const kept = a.write({ name: lockE, owner: 'req_e', seqs: [] }, () => {
      a.store.seats.putSync('s7', seat('suspended'))
      a.outbox.append('audit.seat.suspended', 'seat:s7', { actor: 'operator' }, 's7')
    })
    t.equal(a.events().length, before, 'held while the log has not decided the write')
    await a.ship(kept)
    t.equal(a.refused(kept), undefined)
    t.same(a.events().slice(before), ['audit.seat.suspended seat:s7'], 'delivered once it counts')
    t.equal([...a.store.audit.getRange()].filter(({ value }) => value.subject === 'seat:s7').length, 1, 'and in the audit log')

    const lockF = lockName('seat:s8')
    t.ok(await a.claims.claim(lockF, 'req_f', LOCK_TTL_MS))
    const lost = a.write({ name: lockF, owner: 'req_f', seqs: [] }, () => {
      a.store.seats.putSync('s8', seat('suspended'))
      a.outbox.append('audit.seat.suspended', 'seat:s8', { actor: 'operator' }, 's8')
    })
    t.ok(await b.claims.claim(lockF, 'req_g', 0), 'node-b takes the lock over while node-a is paused')
    await a.ship(lost)
    t.equal(a.refused(lost), 'lock_lost')
    t.same(a.events().slice(before), ['audit.seat.suspended seat:s7'], 'the refused write\'s event is never delivered')
    t.equal([...a.store.audit.getRange()].filter(({ value }) => value.subject === 'seat:s8').length, 0, 'nor kept in the audit log')
  })

  t.test('a write under a lock its writer still holds counts on every node, and so does a record\'s write under none, after it', async (t) => {
    const other = lockName('seat:s2')
    t.ok(await a.claims.claim(other, 'req_c', LOCK_TTL_MS))
    const fence: Fence = { name: other, owner: 'req_c', seqs: [] }
    const first = a.write(fence, () => a.store.seats.putSync('s2', { seat_id: 's2', status: 'approved' } as unknown as SeatRecord))
    const second = a.write(undefined, () => a.store.seats.putSync('s2', { seat_id: 's2', status: 'suspended' } as unknown as SeatRecord))
    await a.ship(second)
    t.equal(a.refused(first), undefined, 'accepted')
    t.equal(await eventually(t, 'node-b has both, in order', () => b.shown('s2'), { within: 10_000, until: (s) => s === 'suspended' }), 'suspended')
  })

  t.test('a transaction larger than the engine takes in one message (a job giving back a thousand holds) ships as several commands, all decided against its lock', async (t) => {
    const big = lockName('catalog')
    t.ok(await a.claims.claim(big, 'job_1', LOCK_TTL_MS))
    const fence: Fence = { name: big, owner: 'job_1', seqs: [] }
    const note = 'x'.repeat(600)
    const seq = a.write(fence, () => { for (let i = 0; i < 2000; i++) a.store.seats.putSync(`bulk-${i}`, { seat_id: `bulk-${i}`, status: 'approved', note } as unknown as SeatRecord) })
    await a.ship(seq)
    t.equal(a.refused(seq), undefined, 'accepted: its 1.3 MB went as several commands')
    t.equal(await eventually(t, 'node-b has every row', () => { b.store.refresh(); return [...b.store.seats.getKeys({ start: 'bulk-', end: 'bulk-~' })].length }, { within: 20_000, until: (n) => n === 2000 }), 2000)
  })

  t.test('a row not a record written under a lock by a writer paused before its copy: the next holder copies and reads it, and the copy landing last changes nothing, on any node or a node joining', async (t) => {
    const partner = lockName('partner:p1')
    const screen = (name: string) => ({ screen_id: 'scr1', name }) as unknown as ScreenRecord
    t.ok(await a.claims.claim(partner, 'req_p', LOCK_TTL_MS), 'node-a\'s request takes the partner\'s lock')
    const fenceA: Fence = { name: partner, owner: 'req_p', seqs: [] }
    const seqA = a.write(fenceA, () => a.store.screens.putSync('scr1', screen('by a')))
    // node-a's command lands in the log, and node-a pauses before it copies the screen: proposed here as its shipper does.
    const entry = a.store.changes!.pending(10).find((p) => p.seq === seqA)!
    const { key, body } = commitCommand('node-a-data', seqA, entry.changes, { name: partner, owner: 'req_p' }, entry.before)
    const accepted = await a.names.propose(key, body, false, 5000)
    t.match(accepted, { status: 'accepted' }, 'the log accepts node-a\'s write')
    const at = (accepted!.result as { seq: number }).seq

    t.ok(await b.claims.claim(partner, 'req_q', 0), 'node-b\'s request takes the lock over (30 s on)')
    await b.shipper.copyPending(partner)
    t.equal(await eventually(t, 'node-b reads node-a\'s accepted write before its handler would', () => b.screen('scr1'), { within: 10_000, until: (n) => n === 'by a' }), 'by a', 'copied by node-b itself, as RecordLocks does once a claim is won')
    const fenceB: Fence = { name: partner, owner: 'req_q', seqs: [] }
    const seqB = b.write(fenceB, () => b.store.screens.putSync('scr1', screen('by b')))
    await b.ship(seqB)
    t.equal(b.refused(seqB), undefined)
    await eventually(t, 'node-a has node-b\'s write', () => a.screen('scr1'), { within: 10_000, until: (n) => n === 'by b' })

    // node-a wakes and its copy of the screen lands, last in the state bucket.
    const kvKey = stateKey('screens', 'scr1')
    await a.e.js.publish(`$KV.${STATE_BUCKET}.${kvKey}`, packStamped(RowVersions.copy(at, { value: screen('by a') })))
    const last = async (): Promise<string | undefined> => ((unpackEntry((await a.e.state.get(kvKey))!.value).value as { name?: string }).name)
    t.equal(await eventually(t, 'a node puts node-b\'s value back on top of the state bucket', last, { within: 10_000, until: (n) => n === 'by b' }), 'by b')
    t.equal(a.screen('scr1'), 'by b', 'node-a never took its own late copy')
    t.equal(b.screen('scr1'), 'by b', 'nor did node-b')

    await a.ship(seqA)
    t.equal(a.refused(seqA), undefined, 'node-a\'s request learns its write counted (node-b read it)')
    t.equal(await eventually(t, 'the log keeps nothing of either write to copy, once both copies are told', () => { a.store.refresh(); return [...a.store.pendingCopies.getKeys()].length }, { within: 10_000, until: (n) => n === 0 }), 0)
    t.equal(a.screen('scr1'), 'by b')

    for (const n of [a, b]) t.equal(await eventually(t, 'no repair is left due', () => { n.store.refresh(); return [...n.store.repairsDue.getKeys()].length }, { within: 10_000, until: (k) => k === 0 }), 0)

    const c = await node('node-c')
    t.equal(await eventually(t, 'a node joining now reads node-b\'s value from the state bucket', () => c.screen('scr1'), { within: 10_000, until: (n) => n === 'by b' }), 'by b')

    // The same late copy again, while no node applies the bucket: as if every node that saw it was killed before its
    // repair landed. node-a's repair, kept due in the skip's transaction, is made once it is back.
    for (const n of [a, b, c]) n.applier.stop()
    const stale = await a.e.js.publish(`$KV.${STATE_BUCKET}.${kvKey}`, packStamped(RowVersions.copy(at, { value: screen('by a') })))
    t.equal(await last(), 'by a', 'the late copy is the bucket\'s last value')
    a.store.write(() => a.store.repairsDue.putSync(kvKey, stale.seq))
    t.equal(await eventually(t, 'node-a\'s due repair puts node-b\'s value back', last, { within: 10_000, until: (n) => n === 'by b' }), 'by b')
    t.equal(await eventually(t, 'and is done', () => { a.store.refresh(); return a.store.repairsDue.get(kvKey) }, { within: 10_000, until: (r) => r === undefined }), undefined)
  })
}
