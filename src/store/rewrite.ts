import type { Database } from 'lmdb'
import type { Store } from './store.js'

const BATCH = 5000

/**
 * Walks a table from its start to its end a batch at a time, and calls change for each entry inside a transaction per
 * batch: for moving data at start, where one transaction over a whole table would hold LMDB's writer lock, and the
 * memory of every entry, for as long as the table is large. Entries change writes may come up again later in the walk.
 */
export function rewriteInBatches<V, K extends Array<string | number> | string | number> (store: Store, table: Database<V, K>, change: (key: K, value: V) => void): void {
  let start: K | undefined
  for (;;) {
    const batch = [...table.getRange({ ...(start !== undefined ? { start } : {}), limit: BATCH } as never)] as Array<{ key: K, value: V }>
    store.write(() => { for (const { key, value } of batch) change(key, value) })
    if (batch.length < BATCH) return
    start = batch[batch.length - 1]!.key
  }
}

/**
 * Runs a move of stored data once: a meta flag, set when it is done, lets every later start skip reading the tables it
 * walks. A start that dies midway runs it again, so a move must skip what it already moved.
 */
export function runOnce (store: Store, name: string, move: () => void): void {
  const flag = `migrated:${name}`
  if (store.meta.get(flag) === true) return
  move()
  store.write(() => store.meta.putSync(flag, true))
}
