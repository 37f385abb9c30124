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
