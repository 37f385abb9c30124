import { existsSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'

/**
 * Opening the LMDB environment from a second process while this one commits can break it. lmdb-js's LMDB ends every
 * open (`mdb_env_open2`) by storing the transaction id of the meta page it read into the lock file's shared
 * `mti_txnid`, without the writer lock, and writers start their next transaction from that id and its meta page. An
 * opener descheduled between its read and that store sets the id back past the commits made meanwhile: one commit
 * back, a writer starts from the older meta page and can overwrite a commit; two or more, every write fails with
 * `MDB_BAD_TXN: mdb_page_touch no parent` (a restarted analytics process did this to a service under load). The
 * threads of one process share one environment and never open it twice.
 *
 * So another process opens the environment only while the process that owns it holds the writer lock: the opener asks
 * (openWhenHeld), the owner takes a write transaction, says go through a file and waits for the opener's file that
 * says it has opened (holdWritesFor). Files, because the owner's event loop is stopped while it holds the lock. The
 * opener opens read-only: lmdb-js opens each table of a writable environment in a write transaction, which would wait
 * for the lock the owner holds. A few milliseconds of writes wait, once per start of the other process.
 */

/** How long the owner holds its writers for an opener before it lets them go anyway. */
const HOLD_MS = 2000
/** How long an opener waits for the owner's go before it opens without it (an owner that does not answer). */
const GO_WAIT_MS = 10_000

const sleeper = new Int32Array(new SharedArrayBuffer(4))

const files = (dataDir: string, pid: number) => ({ go: join(dataDir, `.open-go-${pid}`), opened: join(dataDir, `.open-done-${pid}`) })

function alive (pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

/**
 * The owner's side: holds every writer of the environment (this process's and any other's) inside one write
 * transaction until process `pid` has opened it, or died, or HOLD_MS passed. Answers whether it opened meanwhile.
 */
export function holdWritesFor (write: (fn: () => boolean) => boolean, dataDir: string, pid: number): boolean {
  const { go, opened } = files(dataDir, pid)
  try {
    return write(() => {
      writeFileSync(go, '')
      const until = Date.now() + HOLD_MS
      while (!existsSync(opened)) {
        if (Date.now() >= until || !alive(pid)) return false
        Atomics.wait(sleeper, 0, 0, 1)
      }
      return true
    })
  } finally {
    rmSync(go, { force: true })
    rmSync(opened, { force: true })
  }
}

/**
 * The opener's side: asks the owner to hold its writers (ask), waits for its go, opens the environment read-only with
 * open, and says so. Without a go in GO_WAIT_MS it opens anyway and says why (warn).
 */
export async function openWhenHeld<T> (dataDir: string, ask: () => void, open: () => T, warn: (why: string) => void): Promise<T> {
  const { go, opened } = files(dataDir, process.pid)
  ask()
  // Waited for on the event loop: the question goes out through it.
  const until = Date.now() + GO_WAIT_MS
  while (!existsSync(go) && Date.now() < until) await new Promise((resolve) => setTimeout(resolve, 1))
  if (!existsSync(go)) warn(`the service did not hold its writers within ${GO_WAIT_MS} ms; opening LMDB beside its commits`)
  try {
    return open()
  } finally {
    // An owner that gave up waiting has removed its go: a file written now would be left behind.
    if (existsSync(go)) writeFileSync(opened, '')
  }
}
