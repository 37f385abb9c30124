import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { openStore } from '../src/store/store.js'

t.test('a rolled-back write never shows through the read cache', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'oohbid-cache-'))
  const store = openStore(dir)
  t.teardown(async () => { await store.close(); rmSync(dir, { recursive: true, force: true }) })
  const record = (status: string) => ({ creative_id: 'cr_1', seat_id: 's', name: 'n', content_type: 'image/png', mode: 'url', status, created_at: '', updated_at: '', moderated_at: null }) as never
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
  const dir = mkdtempSync(join(tmpdir(), 'oohbid-cache-'))
  const a = openStore(dir)
  const b = openStore(dir, undefined, false, a.generations)
  t.teardown(async () => { await b.close(); await a.close(); rmSync(dir, { recursive: true, force: true }) })
  const record = (status: string) => ({ creative_id: 'cr_1', seat_id: 's', name: 'n', content_type: 'image/png', mode: 'url', status, created_at: '', updated_at: '', moderated_at: null }) as never
  a.write(() => a.creatives.putSync('cr_1', record('pending_moderation')))
  // As each request and each message from another thread does: read from a snapshot taken now.
  b.refresh()
  t.equal(b.creatives.get('cr_1')!.status, 'pending_moderation', 'b reads and caches it')
  const version = b.creatives.version
  a.write(() => a.creatives.putSync('cr_1', record('approved')))
  b.refresh()
  t.equal(b.creatives.get('cr_1')!.status, 'approved', 'a\'s commit dropped b\'s copy')
  t.ok(b.creatives.version > version, 'and moved the version b\'s derived memory keys on')
  t.throws(() => a.write(() => { a.creatives.putSync('cr_1', record('rejected')); throw new Error('rollback') }))
  b.refresh()
  t.equal(b.creatives.get('cr_1')!.status, 'approved', 'a rollback in a shows nothing in b')
})
