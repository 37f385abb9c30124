import { randomBytes } from 'node:crypto'
import type { Store } from './store.js'

/**
 * A 32-byte secret kept in the LMDB environment under `name`, created on first use: every node sharing the
 * environment signs and verifies with the same secret, and a restart keeps it.
 */
export function secret (store: Store, name: string): Buffer {
  let value = store.meta.get(`secret:${name}`) as Buffer | undefined
  if (value === undefined) {
    value = randomBytes(32)
    store.write(() => store.meta.putSync(`secret:${name}`, value))
  }
  return Buffer.from(value)
}
