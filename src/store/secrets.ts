import { randomBytes } from 'node:crypto'
import type { Store } from './store.js'

/**
 * A 32-byte secret kept in the LMDB environment under `name`, created on first use: every node sharing the
 * environment signs and verifies with the same secret, and a restart keeps it.
 */
export function secret (store: Store, name: string): Buffer {
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
