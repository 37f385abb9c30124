// The LMDB commit ceiling: small synchronous write transactions back to back (a bid's size, opened with the service's
// environment options), by one or several threads of one process over one environment. LMDB takes one writer
// at a time, so this is the most acknowledged bids per second any number of hot threads can reach on one node.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads'
import { open } from 'lmdb'
import { environmentOptions } from '../../src/store/store.js'

const OPTIONS = environmentOptions({ mode: 'os', syncIntervalMs: 1000 })
const RECORD = { bid_id: 'b', impid: 'i', seat_id: 'bench', price: 6.5, adm: 'x'.repeat(700), received_at: 0 }

function commit (path: string, ms: number, prefix: string): number {
  const root = open({ path, ...OPTIONS })
  const db = root.openDB<unknown, string>('bids', { sharedStructuresKey: Symbol.for('structures') })
  let n = 0
  const until = performance.now() + ms
  while (performance.now() < until) {
    root.transactionSync(() => db.putSync(`${prefix}${n % 10_000}`, { ...RECORD, received_at: n }))
    n++
  }
  return n
}

if (!isMainThread) parentPort!.postMessage(commit(workerData.path as string, workerData.ms as number, workerData.prefix as string))

/** Commits per second with `threads` threads writing at once for ms milliseconds. */
export async function commitCeiling (threads: number, ms = 2000): Promise<number> {
  const dir = mkdtempSync(join(tmpdir(), 'oohbid-commits-'))
  const path = join(dir, 'c.lmdb')
  open({ path, ...OPTIONS }).openDB('bids', {})
  const counts = await Promise.all(Array.from({ length: threads }, (_, i) => new Promise<number>((resolve, reject) => {
    const w = new Worker(new URL(import.meta.url), { workerData: { path, ms, prefix: `t${i}-` } })
    w.once('message', resolve)
    w.once('error', reject)
  })))
  rmSync(dir, { recursive: true, force: true })
  return Math.round(counts.reduce((a, b) => a + b, 0) / (ms / 1000))
}
