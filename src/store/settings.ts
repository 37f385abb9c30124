import type { PlatformSettings } from '../generated/types.js'
import { runOnce } from './rewrite.js'
import type { Store } from './store.js'

/** An operator switch as stored: PUT /admin/v1/settings writes them, a removed one is absent. */
export type Settings = { [K in keyof PlatformSettings]?: Exclude<PlatformSettings[K], null> }

/**
 * The operator's switches, in the `settings` table (replicated, so a cluster's nodes list and play the same). A
 * switch never set reads undefined: its default is the configuration's, applied where it is read.
 */
export function setting<K extends keyof Settings> (store: Store, name: K): Settings[K] {
  return store.settings.get(name) as Settings[K]
}

/** Sets or (undefined) removes a switch. Call inside Store.write. */
export function putSetting<K extends keyof Settings> (store: Store, name: K, value: Settings[K]): void {
  if (value === undefined) store.settings.removeSync(name)
  else store.settings.putSync(name, value)
}

/** Moves the switches an earlier version kept in meta (`settings:<name>`) into the settings table, once. */
export function adoptMetaSettings (store: Store): void {
  runOnce(store, 'settings', () => store.write(() => {
    for (const name of ['partner_display', 'house_creative_id'] as const) {
      const value = store.meta.get(`settings:${name}`)
      if (value === undefined) continue
      store.settings.putSync(name, value)
      store.meta.removeSync(`settings:${name}`)
    }
  }))
}
