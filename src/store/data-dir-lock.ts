import { mkdirSync, statSync, unlinkSync } from 'node:fs'
import { connect, createServer, type Server } from 'node:net'
import { join } from 'node:path'
import { StartRefused } from '../start-refused.js'

/** The data directory's owner, held until release. */
export interface DataDirLock {
  release (): Promise<void>
}

/**
 * Makes this process the one owner of a data directory (created if missing), or refuses to start. Two services on one directory would each
 * keep their own in-memory mirrors (rate windows, stats, the key cache) over one LMDB file and answer differently;
 * the hot threads of one process share it through that process.
 *
 * The lock is a Unix socket the owner listens on. On Linux it lives in the abstract namespace, named for the
 * directory's device and inode (any spelling of the path, symlinks included, finds it): binding is atomic and the
 * kernel frees the name when the process dies, kill -9 included, so the lock never goes stale. Elsewhere it is a
 * socket file in the directory, and a file nobody answers on is the mark of a dead owner and is replaced. The owner
 * answers a connection with its pid, which the refusal names. Sockets are per network namespace: containers that
 * share a volume must not share a data directory.
 */
export async function lockDataDir (dataDir: string, abstract = process.platform === 'linux'): Promise<DataDirLock> {
  mkdirSync(dataDir, { recursive: true })
  const { dev, ino } = statSync(dataDir)
  const address = abstract ? `\0oohbid-data-dir:${dev}:${ino}` : join(dataDir, '.owner.sock')
  const server = createServer((socket) => socket.end(String(process.pid)))
  server.unref()
  try {
    await bind(server, address)
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EADDRINUSE') throw err
    const owner = await ownerPid(address)
    if (owner !== undefined || abstract) throw new StartRefused(`DATA_DIR ${dataDir} is in use by another oohbid process (pid ${owner ?? 'unknown'}); stop it first, or give this one its own DATA_DIR.`)
    unlinkSync(address)
    await bind(server, address)
  }
  return { release: () => new Promise<void>((resolve) => server.close(() => resolve())) }
}

function bind (server: Server, address: string): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject)
    server.listen(address, () => {
      server.off('error', reject)
      resolve()
    })
  })
}

/** The pid the owner answers with ('unknown' if it says nothing), or undefined when nobody listens (a socket file its dead owner left). */
function ownerPid (address: string): Promise<string | undefined> {
  return new Promise((resolve) => {
    let text = ''
    let connected = false
    const socket = connect(address, () => { connected = true })
    socket.setEncoding('utf8')
    socket.setTimeout(2000, () => socket.destroy())
    socket.on('data', (chunk: string) => { text += chunk })
    // Whoever accepts the connection is alive, whatever it answers.
    socket.on('error', () => { if (!connected) resolve(undefined) })
    socket.on('close', () => resolve(connected ? (/^\d+$/.test(text) ? text : 'unknown') : undefined))
  })
}
