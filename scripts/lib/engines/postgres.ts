import { execFileSync } from 'node:child_process'
import { appendFileSync, chownSync, mkdirSync } from 'node:fs'
import { join } from 'node:path'
import pg from 'pg'
import { findBinary, freePort, member, readyOrStopped, stopAll, until, type LocalEngine } from './local.js'

/** PostgreSQL refuses to run as root: members run as the postgres user Debian's package made, when we are root. */
function runAs (): { uid: number, gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined
  const uid = Number(execFileSync('id', ['-u', 'postgres']).toString())
  const gid = Number(execFileSync('id', ['-g', 'postgres']).toString())
  return { uid, gid }
}

/** Debian keeps the server binaries out of PATH. */
const SERVER_DIRS = ['/usr/lib/postgresql/15/bin']

/** Whether PostgreSQL 15's server is installed (Debian's postgresql-15). */
export function postgresInstalled (): boolean {
  return findBinary('postgres', SERVER_DIRS) !== undefined && findBinary('pg_basebackup', SERVER_DIRS) !== undefined
}

function bin (name: string): string {
  return findBinary(name, SERVER_DIRS) ?? name
}

/** A local PostgreSQL cluster, with what only it has: one primary taking every write, and promotion by hand. */
export interface PostgresCluster extends LocalEngine {
  /** The primary's address: every write goes there. */
  primary: string
  /** Promotes a standby (its member name) to primary, as a failover manager does, and waits until it is one. */
  promote (member: string): void
}

/**
 * A PostgreSQL 15 primary with size - 1 streaming standbys on loopback, committing with quorum replication: a commit
 * returns once the primary and `ANY k` standbys (a majority of all members) have it, synchronous_commit = remote_write.
 * Each member writes to the OS without fsync (fsync = off), the durability oohbid's DURABILITY=os gives and NATS
 * JetStream's file store has between its syncs: a member's crash loses nothing the OS holds, a machine's loss is
 * covered by the others. Failover (Patroni) is not part of this: it changes who is primary, not what a commit costs.
 */
export async function startPostgresCluster (dir: string, size = 3): Promise<PostgresCluster> {
  const user = runAs()
  const as = user ?? {}
  const ports = await Promise.all(Array.from({ length: size }, () => freePort()))
  const homes = ports.map((_, i) => join(dir, `pg-${i + 1}`))
  // The standbys' folders are made by pg_basebackup, as the postgres user, inside dir.
  for (const home of [dir, homes[0]!]) {
    mkdirSync(home, { recursive: true })
    if (user !== undefined) chownSync(home, user.uid, user.gid)
  }
  const names = homes.slice(1).map((_, i) => `s${i + 1}`)
  const quorum = Math.floor(size / 2)
  execFileSync(bin('initdb'), ['-D', homes[0]!, '-U', 'postgres', '--auth=trust', '--no-sync'], { ...as, stdio: 'ignore' })
  const settings = (port: number, home: string) => [
    `port = ${port}`, "listen_addresses = '127.0.0.1'", `unix_socket_directories = '${home}'`, 'fsync = off', 'full_page_writes = off',
    'synchronous_commit = remote_write', 'wal_level = replica', 'max_wal_senders = 10', 'shared_buffers = 128MB', 'max_connections = 200'
  ].join('\n') + '\n'
  appendFileSync(join(homes[0]!, 'postgresql.conf'), settings(ports[0]!, homes[0]!) + `synchronous_standby_names = 'ANY ${quorum} (${names.join(', ')})'\n`)
  const children = [member(bin('postgres'), ['-D', homes[0]!], as)]
  const engine: PostgresCluster = {
    name: 'postgres',
    urls: ports.map((port) => `postgres://postgres@127.0.0.1:${port}/postgres`),
    primary: `postgres://postgres@127.0.0.1:${ports[0]}/postgres`,
    members: () => children.map((c, i) => ({ name: i === 0 ? 'primary' : names[i - 1]!, pid: c.pid! })),
    stop: () => stopAll(children),
    promote: (name) => { execFileSync(bin('pg_ctl'), ['promote', '-w', '-D', homes[names.indexOf(name) + 1]!], { ...as, stdio: 'ignore' }) }
  }
  return readyOrStopped(engine, children, async () => {
    const sql = async (text: string) => {
      const client = new pg.Client({ connectionString: engine.primary })
      await client.connect()
      try {
        return (await client.query(text)).rows
      } finally {
        await client.end()
      }
    }
    await until(() => sql('SELECT 1'), 30_000, 'PostgreSQL primary')
    for (let i = 1; i < size; i++) {
      execFileSync(bin('pg_basebackup'), ['-h', '127.0.0.1', '-p', String(ports[0]), '-U', 'postgres', '-D', homes[i]!, '-X', 'stream', '--no-sync'], { ...as, stdio: 'ignore' })
      appendFileSync(join(homes[i]!, 'postgresql.auto.conf'), settings(ports[i]!, homes[i]!) + `primary_conninfo = 'host=127.0.0.1 port=${ports[0]} user=postgres application_name=${names[i - 1]}'\n`)
      appendFileSync(join(homes[i]!, 'standby.signal'), '')
      children.push(member(bin('postgres'), ['-D', homes[i]!], as))
    }
    await until(async () => {
      const rows = await sql("SELECT count(*)::int AS n FROM pg_stat_replication WHERE sync_state = 'quorum' AND state = 'streaming'")
      if (rows[0].n !== size - 1) throw new Error(`${rows[0].n} of ${size - 1} standbys streaming`)
    }, 60_000, 'PostgreSQL standbys')
  })
}
