import { randomBytes } from 'node:crypto'
import type { Store } from './store.js'

/** The secrets the service signs with: imp ids (src/inventory/adslots/imp-ids.ts) and upload URLs (src/creatives). */
export const SECRETS = ['imp_ids', 'uploads'] as const

export type SecretName = typeof SECRETS[number]

/**
 * A 32-byte secret kept in the LMDB environment under `name`, created on first use: every node sharing the
 * environment signs and verifies with the same secret, and a restart keeps it.
 */
export function secret (store: Store, name: SecretName): Buffer {
  const key = `secret:${name}`
  // Looked at again under the write lock: two threads starting together must not each create one.
  const value = (store.meta.get(key) as Buffer | undefined) ?? store.write(() => {
    const stored = store.meta.get(key) as Buffer | undefined
    if (stored !== undefined) return stored
    const made = randomBytes(32)
    store.meta.putSync(key, made)
    return made
  })
  return Buffer.from(value)
}

/**
 * A cluster node's secrets, the same on every node: an imp id issued by one node is verified by another, which takes
 * the bid. Derived from a secret every node is given (KEY_ENCRYPTION_KEY) and stored before any thread reads them.
 */
export function shareSecrets (store: Store, derive: (name: SecretName) => Buffer): void {
  store.write(() => { for (const name of SECRETS) store.meta.putSync(`secret:${name}`, derive(name)) })
}
