import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { countLogged, dropShipped, FunnelLog, loggedEvents, RECORD_EVENTS } from './funnel.js'
import { openStore, type Store } from '../store/store.js'
import type { FunnelEvent } from '../generated/types.js'

function fresh (t: Test): Store {
  const dir = mkdtempSync(join(tmpdir(), 'oohbid-funnel-'))
  const store = openStore(dir)
  t.teardown(async () => { await store.close(); rmSync(dir, { recursive: true, force: true }) })
  return store
}

const request = (at: number, seat = 's'): FunnelEvent => ({ stage: 'request', at, seat_id: seat, sandbox: false, screens: ['scr_1'] })

// The funnel log's size is what /metrics and /readyz report; past 100k waiting events it is a running count, since
// counting keys on every scrape would stall the event loop for seconds during a long ClickHouse outage.

t.test('size() follows appends, rollbacks and shipped batches, large backlog or small', async (t) => {
  const store = fresh(t)
  const log = new FunnelLog(store)
  const at = Date.now()
  const append = (n: number) => store.write(() => { for (let i = 0; i < n; i++) log.append(request(at)) })
  for (let k = 0; k < 15; k++) append(10_000)
  t.equal(log.size(), 150_000)
  t.throws(() => store.write(() => { log.append(request(at)); throw new Error('rollback') }))
  t.equal(log.size(), 150_000, 'a rolled-back append is not counted')
  // What the analytics process does with a batch: delete it, then report it.
  const hundredThousandth = [...loggedEvents(store)][99_999]!.id
  store.write(() => dropShipped(store, hundredThousandth))
  log.shipped(100_000)
  t.equal(log.size(), 50_000)
  t.equal(countLogged(store), 50_000, 'the same as counting the records')
  t.equal(new FunnelLog(store).size(), 50_000, 'a restart counts what waits')
})

t.test("a transaction's events are one record of consecutive ids, up to RECORD_EVENTS each", async (t) => {
  const store = fresh(t)
  const log = new FunnelLog(store)
  const at = 1_764_000_000_000
  const ids = store.write(() => Array.from({ length: RECORD_EVENTS + 3 }, (_, i) => log.append(request(at, `s${i}`))))
  t.same(ids, ids.map((_, i) => at * 1000 + i), 'the first id is the time of its event, the rest follow on')
  t.same([...store.funnel.getKeys()], [[at * 1000, RECORD_EVENTS], [at * 1000 + RECORD_EVENTS, 3]], 'a full record, then the rest')
  t.equal(log.lastId, ids.at(-1), 'committed')
  const next = store.write(() => log.append(request(at)))
  t.equal(next, ids.at(-1)! + 1, 'ids stay ordered when the clock has not moved on')
  t.same(log.read(100).map((e) => [e.id, e.event.seat_id]), [...ids.map((id, i) => [id, `s${i}`]), [next, 's']], 'read gives every event with its id')
  t.same(log.read(2, ids[RECORD_EVENTS - 2]!).map((e) => e.id), [ids[RECORD_EVENTS - 1], ids[RECORD_EVENTS]], 'from inside a record')

  t.throws(() => store.write(() => { log.append(request(at)); log.append(request(at)); throw new Error('rollback') }))
  t.equal(countLogged(store), RECORD_EVENTS + 4, 'a rolled-back transaction leaves no record')
  const after = store.write(() => log.append(request(at + 5)))
  t.equal(after, (at + 5) * 1000, 'and its ids are not reused where the clock moved on')

  // Two logs over one store (the supervisor's and a test's) in one transaction still give each record consecutive ids.
  const other = new FunnelLog(store, log.buffer)
  store.write(() => { log.append(request(at + 9)); other.append(request(at + 9)); log.append(request(at + 9)) })
  const events = [...loggedEvents(store)]
  t.same(events.map((e) => e.id), [...events.map((e) => e.id)].sort((a, b) => a - b), 'ids ordered')
  t.equal(new Set(events.map((e) => e.id)).size, events.length, 'and unique')
  t.equal(countLogged(store), RECORD_EVENTS + 8)

  // A batch ends at a record's end, and only whole records are deleted.
  const cut = events[RECORD_EVENTS - 1]!
  t.ok(cut.recordEnd, 'the last event of the first record ends it')
  t.equal(store.write(() => dropShipped(store, cut.id)), 1, 'one record dropped')
  t.equal(countLogged(store), 8)
  t.equal([...loggedEvents(store)][0]!.id, events[RECORD_EVENTS]!.id, 'the log starts where the batch ended')
})

t.test('events logged one entry each by an earlier version are adopted, ids kept', async (t) => {
  const store = fresh(t)
  const at = 1_764_000_000_000
  store.write(() => { for (let i = 0; i < 12_000; i++) store.legacyFunnel.putSync(at * 1000 + i, request(at)) })
  const log = new FunnelLog(store)
  t.equal(store.legacyFunnel.getCount(), 0, 'the old table is emptied')
  t.equal(log.size(), 12_000)
  t.same([...loggedEvents(store)].slice(0, 2).map((e) => e.id), [at * 1000, at * 1000 + 1])
  t.equal(store.write(() => log.append(request(at))), at * 1000 + 12_000, 'new ids follow the adopted ones')
})
