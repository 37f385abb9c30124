import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { openStore, type Store } from './store.js'
import { Derived } from './read-cache.js'

/** Two stores over one new environment, sharing their cache generations as two hot threads do. */
function stores (t: { teardown (fn: () => unknown): void }): [Store, Store] {
  const dir = mkdtempSync(join(tmpdir(), 'oohbid-cache-'))
  const a = openStore(dir)
  const b = openStore(dir, undefined, a.generations)
  t.teardown(async () => { await b.close(); await a.close(); rmSync(dir, { recursive: true, force: true }) })
  return [a, b]
}

const record = (status: string) => ({ creative_id: 'cr_1', seat_id: 's', name: 'n', content_type: 'image/png', mode: 'url', status, created_at: '', updated_at: '', moderated_at: null }) as never

t.test('a rolled-back write never shows through the read cache', async (t) => {
  const [store] = stores(t)
  store.write(() => store.creatives.putSync('cr_1', record('awaiting_upload')))
  t.equal(store.creatives.get('cr_1')!.status, 'awaiting_upload', 'read once: now cached')
  t.throws(() => store.write(() => { store.creatives.putSync('cr_1', record('pending_moderation')); throw new Error('rollback') }))
  t.equal(store.creatives.get('cr_1')!.status, 'awaiting_upload', 'the committed value, not the aborted one')
  store.write(() => store.creatives.putSync('cr_1', record('approved')))
  t.equal(store.creatives.get('cr_1')!.status, 'approved', 'a committed write is seen at once')
  store.write(() => store.creatives.removeSync('cr_1'))
  t.equal(store.creatives.get('cr_1'), undefined)
})

t.test('hot threads\' caches over one environment: a write through one is read through the other at once', async (t) => {
  const [a, b] = stores(t)
  a.write(() => a.creatives.putSync('cr_1', record('pending_moderation')))
  // As each request and each message from another thread does: read from a snapshot taken now.
  b.refresh()
  t.equal(b.creatives.get('cr_1')!.status, 'pending_moderation', 'b reads and caches it')
  const version = b.creatives.version
  t.type(version, 'number', 'a fresh snapshot has a version to key derived memory on')
  a.write(() => a.creatives.putSync('cr_1', record('approved')))
  b.refresh()
  t.equal(b.creatives.get('cr_1')!.status, 'approved', 'a\'s commit dropped b\'s copy')
  t.ok(b.creatives.version! > version!, 'and moved the version b\'s derived memory keys on')
  t.throws(() => a.write(() => { a.creatives.putSync('cr_1', record('rejected')); throw new Error('rollback') }))
  b.refresh()
  t.equal(b.creatives.get('cr_1')!.status, 'approved', 'a rollback in a shows nothing in b')
})

t.test('a value read from a snapshot older than the commit that changed it serves that read only', async (t) => {
  const [a, b] = stores(t)
  a.write(() => a.creatives.putSync('cr_1', record('pending_moderation')))
  b.refresh()
  // b's request has begun: its first read fixes its snapshot, then a commits a change and moves the generation.
  b.meta.get('anything')
  a.write(() => a.creatives.putSync('cr_1', record('approved')))
  t.equal(b.creatives.get('cr_1')!.status, 'pending_moderation', 'b\'s request reads its own snapshot')
  b.refresh()
  t.equal(b.creatives.get('cr_1')!.status, 'approved', 'b\'s next request reads the commit, not a copy kept from the old snapshot')
})

t.test('a value read inside the transaction that wrote it is not kept when the transaction rolls back', async (t) => {
  const [store] = stores(t)
  store.write(() => store.creatives.putSync('cr_1', record('awaiting_upload')))
  t.throws(() => store.write(() => {
    store.creatives.putSync('cr_1', record('pending_moderation'))
    t.equal(store.creatives.get('cr_1')!.status, 'pending_moderation', 'the transaction reads its own write')
    throw new Error('rollback')
  }))
  store.refresh()
  t.equal(store.creatives.get('cr_1')!.status, 'awaiting_upload', 'the committed value after the rollback')
})

t.test('a write transaction never reads a copy that a commit of another thread has outdated, before or after that commit moves the generation', async (t) => {
  const [a, b] = stores(t)
  a.write(() => a.creatives.putSync('cr_1', record('pending_moderation')))
  b.refresh()
  t.equal(b.creatives.get('cr_1')!.status, 'pending_moderation', 'b reads and caches it')
  let inTheGap: string | undefined
  a.write(() => {
    // Registered before a's write, so it runs first after a's commit: a has committed, its generation has not moved.
    a.afterCommit(() => { inTheGap = b.write(() => b.creatives.get('cr_1')!.status) })
    a.creatives.putSync('cr_1', record('approved'))
  })
  t.equal(inTheGap, 'approved', 'b\'s transaction read a\'s commit, as moderation\'s check-then-write must')
  t.equal(b.write(() => b.creatives.get('cr_1')!.status), 'approved', 'and after the generation moved')
  b.refresh()
  t.equal(b.creatives.get('cr_1')!.status, 'approved')
})

t.test('a rolled-back transaction leaves the cache serving write transactions', async (t) => {
  const [a, b] = stores(t)
  a.write(() => a.creatives.putSync('cr_1', record('pending_moderation')))
  // The rollback comes after the transaction's closing work, when its generation-to-be has moved.
  t.throws(() => a.write(() => { a.creatives.putSync('cr_2', record('approved')); a.beforeCommit(() => { throw new Error('rollback') }) }))
  b.refresh()
  t.equal(b.creatives.get('cr_1')!.status, 'pending_moderation', 'b reads and caches it')
  const cached = b.creatives.get('cr_1')
  t.equal(b.write(() => b.creatives.get('cr_1')), cached, 'a write transaction is served the very copy: the generations agree again')
})

t.test('a table has no version while this thread\'s reads may not match it', async (t) => {
  const [a, b] = stores(t)
  const deal = { deal_id: 'd_1', status: 'active', invited_seats: ['seat-1'] } as never
  b.refresh()
  t.type(b.deals.version, 'number', 'a fresh snapshot has one')
  // b's request has begun: its first read fixes its snapshot, then a commits a deal and moves the generation.
  b.meta.get('anything')
  a.write(() => a.deals.putSync('d_1', deal))
  t.equal(b.deals.version, undefined, 'none while b\'s snapshot is older than the generation')
  b.refresh()
  t.type(b.deals.version, 'number', 'one again from b\'s next snapshot')
  let inTheGap: unknown = 'unread'
  a.write(() => {
    a.afterCommit(() => { inTheGap = b.write(() => b.deals.version) })
    a.deals.putSync('d_1', { ...(deal as object), status: 'paused' } as never)
  })
  t.equal(inTheGap, undefined, 'none for a transaction taking the lock between a commit and its generation\'s move')
  t.equal(b.write(() => { b.deals.putSync('d_2', deal); return b.deals.version }), undefined, 'none inside a transaction that wrote the table')
})

t.test('derived memory is kept while its table stands, dropped when it moves, and never kept from a stale snapshot', async (t) => {
  const [a, b] = stores(t)
  let derivations = 0
  const count = new Derived<string, number>(() => b.deals.version)
  const activeOf = (seat: string) => count.of(seat, () => {
    derivations++
    return [...b.deals.getRange()].filter(({ value }) => (value as { invited_seats: string[] }).invited_seats.includes(seat)).length
  })
  const deal = (id: string, seat: string) => ({ deal_id: id, status: 'active', invited_seats: [seat] }) as never
  a.write(() => a.deals.putSync('d_1', deal('d_1', 'seat-1')))
  b.refresh()
  t.equal(activeOf('seat-1'), 1)
  t.equal(activeOf('seat-1'), 1)
  t.equal(derivations, 1, 'derived once while the table stands')
  // b's request has begun; a commits a second deal for the seat meanwhile.
  b.meta.get('anything')
  a.write(() => a.deals.putSync('d_2', deal('d_2', 'seat-1')))
  t.equal(activeOf('seat-1'), 1, 'b\'s older snapshot still sees one')
  b.refresh()
  t.equal(activeOf('seat-1'), 2, 'and what it derived from it was not kept: the next request sees both')
  t.equal(derivations, 3)
  const misses = new Derived<string, number>(() => b.deals.version)
  let looked = 0
  misses.of('none', () => { looked++; return undefined })
  misses.of('none', () => { looked++; return undefined })
  t.equal(looked, 2, 'nothing found is not kept: the next ask looks again')
  const fresh = new Derived<string, { until: number }>(() => b.deals.version, { max: 2, fresh: (v) => v.until > 10 })
  t.equal(fresh.of('k', () => ({ until: 5 })).until, 5)
  t.equal(fresh.of('k', () => ({ until: 20 })).until, 20, 'a kept value past its freshness is derived again')
  t.equal(fresh.of('k', () => ({ until: 30 })).until, 20, 'a fresh one serves')
})
