import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { adoptMetaSettings, putSetting, setting } from './settings.js'
import { openStore } from './store.js'

t.test('switches an earlier version kept in meta move to the settings table once; one removed reads undefined', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'oohbid-settings-'))
  const store = openStore(dir)
  t.teardown(async () => { await store.close(); rmSync(dir, { recursive: true, force: true }) })
  store.write(() => {
    store.meta.putSync('settings:partner_display', true)
    store.meta.putSync('settings:house_creative_id', 'cr_house')
  })
  adoptMetaSettings(store)
  t.equal(setting(store, 'partner_display'), true)
  t.equal(setting(store, 'house_creative_id'), 'cr_house')
  t.equal(store.meta.get('settings:partner_display'), undefined, 'meta no longer holds them')
  store.write(() => putSetting(store, 'house_creative_id', undefined))
  store.write(() => store.meta.putSync('settings:house_creative_id', 'cr_stale'))
  adoptMetaSettings(store)
  t.equal(setting(store, 'house_creative_id'), undefined, 'moved once: a later run moves nothing back')
})
