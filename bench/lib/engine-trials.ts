// What oohbid on several nodes needs from its engine besides appending bids (issue 28), tried on the local clusters of
// scripts/lib/engines: how soon a change written through one member reaches a reader on another (a key revoked on one
// node, refused by every node), and what losing a member costs: how long writes stop, and whether every acknowledged
// write is still there.
import { performance } from 'node:perf_hooks'
import { connect, KvWatchInclude, type NatsConnection } from 'nats'
import pg from 'pg'
import type { NatsEngine } from '../../scripts/lib/engines/nats.js'
import type { PostgresCluster } from '../../scripts/lib/engines/postgres.js'
import { percentile } from './percentile.js'

export interface Trial {
  /** Milliseconds from a write's call to its sight by a reader elsewhere, over `CHANGES` changes. */
  changeP50: number
  changeP99: number
  /** Where the reader sat. */
  reader: string
  /** CLAIMS spots, each claimed at once by one writer through each member: spots with exactly one winner, claim p99 ms. */
  claimedOnce: number
  claimP99: number
  /** Which member was killed (kill -9), and milliseconds from then until a write was acknowledged again. */
  lost: string
  writesBackMs: number
  /** Writes acknowledged before the loss and the first after it; how many of them the survivors hold. */
  acknowledged: number
  held: number
  note: string
}

const CHANGES = 200
const ACKED = 1000
const CLAIMS = 1000

/**
 * Races for each of CLAIMS spots: every claimer tries it at the same moment, and claim answers whether it won. How
 * many spots had exactly one winner, and the p99 of a claim's time.
 */
async function race (claimers: Array<(spot: string) => Promise<boolean>>): Promise<{ claimedOnce: number, claimP99: number }> {
  const times: number[] = []
  let claimedOnce = 0
  for (let i = 0; i < CLAIMS; i++) {
    const wins = await Promise.all(claimers.map(async (claim) => {
      const at = performance.now()
      const won = await claim(`spot-${i}`)
      times.push(performance.now() - at)
      return won
    }))
    if (wins.filter(Boolean).length === 1) claimedOnce++
  }
  return { claimedOnce, claimP99: quantile(times, 0.99) }
}

/** A quantile in ms, to hundredths. */
function quantile (values: number[], q: number): number {
  return Math.round(percentile(values, q) * 100) / 100
}

/** Times each change from its write until onSeen reports it: write i, then wait for i. */
async function timeChanges (write: (i: number) => Promise<void>, subscribe: (seen: (i: number) => void) => Promise<void>): Promise<number[]> {
  const waiting = new Map<number, () => void>()
  await subscribe((i) => waiting.get(i)?.())
  const delays: number[] = []
  for (let i = 0; i < CHANGES; i++) {
    const seen = new Promise<void>((resolve) => waiting.set(i, resolve))
    const at = performance.now()
    await write(i)
    await seen
    delays.push(performance.now() - at)
    waiting.delete(i)
  }
  return delays
}

/** Retries write until it succeeds; the milliseconds it took. */
async function untilWritten (write: () => Promise<unknown>): Promise<number> {
  const at = performance.now()
  for (;;) {
    try {
      await write()
      return Math.round(performance.now() - at)
    } catch {
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
  }
}

/**
 * NATS JetStream: a KV bucket of three replicas written through member 1 and watched through member 2; then the
 * leader of a three-replica stream killed after ACKED acknowledged publishes, and publishing retried until the
 * survivors elect a new leader.
 */
export async function natsTrial (engine: NatsEngine): Promise<Trial> {
  const writer = await connect({ servers: [engine.urls[0]!], noRandomize: true })
  const reader = await connect({ servers: [engine.urls[1]!], noRandomize: true })
  const open = (nc: NatsConnection) => nc.jetstream().views.kv('keys', { replicas: 3 })
  const kv = await open(writer)
  const watched = await open(reader)
  const delays = await timeChanges((i) => kv.put('revoked', String(i)).then(() => undefined), async (seen) => {
    const watch = await watched.watch({ key: 'revoked', include: KvWatchInclude.UpdatesOnly })
    void (async () => { for await (const e of watch) seen(Number(e.string())) })()
  })
  // A KV create fails when the key exists: one claimer per member races for each spot.
  const claimants = await Promise.all(engine.urls.map((url) => connect({ servers: [url], noRandomize: true })))
  const holds = await Promise.all(claimants.map((nc) => nc.jetstream().views.kv('holds', { replicas: 3 })))
  const claims = await race(holds.map((kv, n) => { const value = new TextEncoder().encode(`node-${n}`); return (spot: string) => kv.create(spot, value).then(() => true, () => false) }))
  await Promise.all(claimants.map((nc) => nc.close()))
  await reader.close()
  await writer.close()

  const nc = await connect({ servers: engine.urls, reconnectTimeWait: 50, maxReconnectAttempts: -1 })
  const js = nc.jetstream({ timeout: 500 })
  const jsm = await nc.jetstreamManager()
  await jsm.streams.add({ name: 'LOSS', subjects: ['loss.>'], num_replicas: 3 })
  const encoder = new TextEncoder()
  let acknowledged = 0
  for (; acknowledged < ACKED; acknowledged++) await js.publish('loss.bid', encoder.encode(String(acknowledged)), { msgID: `bid-${acknowledged}` })
  const victim = await engine.leaderOf('LOSS')
  process.kill(victim.pid, 'SIGKILL')
  // The message id makes a retried publish that did land once count once (JetStream's duplicate window).
  const writesBackMs = await untilWritten(() => js.publish('loss.bid', encoder.encode(String(acknowledged)), { msgID: `bid-${acknowledged}` }))
  acknowledged++
  const held = Number((await jsm.streams.info('LOSS')).state.messages)
  await nc.close()
  return { changeP50: quantile(delays, 0.5), changeP99: quantile(delays, 0.99), reader: 'a KV watch on another member', ...claims, lost: `the stream's leader (${victim.name})`, writesBackMs, acknowledged, held, note: 'the survivors elect a new stream leader themselves (RAFT)' }
}

/**
 * PostgreSQL: LISTEN on a second connection (standbys cannot LISTEN, so it is the primary's) to a NOTIFY sent with
 * the change; then the primary killed after ACKED acknowledged commits, and the most advanced standby promoted as a
 * failover manager (Patroni) would, timed from the kill to the first commit on it. Patroni would first wait for the
 * dead primary's leader key to expire (its ttl, 30 s by default), which this does not count.
 */
export async function postgresTrial (engine: PostgresCluster): Promise<Trial> {
  const client = async (url: string) => { const c = new pg.Client({ connectionString: url }); await c.connect(); return c }
  const writer = await client(engine.primary)
  const listener = await client(engine.primary)
  await writer.query('CREATE TABLE IF NOT EXISTS keys (id int PRIMARY KEY, revoked_at bigint)')
  const delays = await timeChanges(async (i) => {
    await writer.query('BEGIN')
    await writer.query('INSERT INTO keys VALUES ($1, $2) ON CONFLICT (id) DO UPDATE SET revoked_at = excluded.revoked_at', [i, Date.now()])
    await writer.query(`NOTIFY revoked, '${i}'`)
    await writer.query('COMMIT')
  }, async (seen) => {
    listener.on('notification', (n) => seen(Number(n.payload)))
    await listener.query('LISTEN revoked')
  })
  await listener.end()
  // Every write goes to the primary: one client a would-be node races there, the key's uniqueness deciding.
  await writer.query('CREATE TABLE IF NOT EXISTS holds (spot text PRIMARY KEY, node int NOT NULL)')
  const claimants = await Promise.all(engine.members().map(() => client(engine.primary)))
  const claims = await race(claimants.map((c, n) => async (spot: string) => (await c.query('INSERT INTO holds VALUES ($1, $2) ON CONFLICT DO NOTHING RETURNING spot', [spot, n])).rowCount === 1))
  await Promise.all(claimants.map((c) => c.end()))
  await writer.query('CREATE TABLE IF NOT EXISTS loss (id int PRIMARY KEY)')
  let acknowledged = 0
  for (; acknowledged < ACKED; acknowledged++) await writer.query('INSERT INTO loss VALUES ($1)', [acknowledged])
  await writer.end().catch(() => undefined)
  const [primary, ...standbys] = engine.members()
  const received = async (url: string) => {
    const c = await client(url)
    try {
      return Number((await c.query("SELECT pg_last_wal_receive_lsn() - '0/0'::pg_lsn AS at")).rows[0].at)
    } finally {
      await c.end()
    }
  }
  process.kill(primary!.pid, 'SIGKILL')
  const killedAt = performance.now()
  const positions = await Promise.all(standbys.map(async (m, i) => ({ m, url: engine.urls[i + 1]!, at: await received(engine.urls[i + 1]!) })))
  const best = positions.sort((a, b) => b.at - a.at)[0]!
  engine.promote(best.m.name)
  const promoted = await client(best.url)
  // Its quorum is gone with the old primary until the other standby follows it: this commit waits for no standby.
  await promoted.query('SET synchronous_commit = local')
  await untilWritten(() => promoted.query('INSERT INTO loss VALUES ($1)', [acknowledged]))
  const writesBackMs = Math.round(performance.now() - killedAt)
  acknowledged++
  const held = Number((await promoted.query('SELECT count(*) AS n FROM loss')).rows[0].n)
  await promoted.end()
  return { changeP50: quantile(delays, 0.5), changeP99: quantile(delays, 0.99), reader: 'LISTEN on the primary (not on a standby)', ...claims, lost: 'the primary', writesBackMs, acknowledged, held, note: `${best.m.name} promoted by hand once the primary was gone; Patroni adds its leader ttl (30 s by default) before it promotes` }
}

/** What losing a member costs appends that may go to any of several partitioned streams. */
export interface PartitionedLoss {
  partitions: number
  /** The longest stretch, in ms, without an acknowledged append, from the kill on. */
  longestGapMs: number
  /** The slowest append from its first try to its acknowledgement, in ms: what a bid's answer waited at worst. */
  slowestMs: number
  acknowledged: number
  /** How many acknowledged appends the survivors hold (by id), and how many were held twice (a timed-out append that had landed, then went to another partition). */
  held: number
  twice: number
}

/**
 * Appends (bids) from WORKERS concurrent writers to PARTITIONS streams of three replicas, each writer moving to the
 * next stream when an append is not acknowledged within 250 ms; a member leading a stream is killed 3 s in and the
 * writers go on for 9 s more. A bid belongs to no partition until the screen's owner decides on it, so any stream
 * whose leader is alive can take it: an election stalls only the appends that were waiting on the dead leader.
 */
export async function natsPartitionedLoss (engine: NatsEngine): Promise<PartitionedLoss> {
  const PARTITIONS = 6
  const WORKERS = 16
  const nc = await connect({ servers: engine.urls, reconnectTimeWait: 50, maxReconnectAttempts: -1 })
  const jsm = await nc.jetstreamManager()
  const js = nc.jetstream({ timeout: 250 })
  const streams = Array.from({ length: PARTITIONS }, (_, p) => `BIDS_${p}`)
  for (const [p, name] of streams.entries()) await jsm.streams.add({ name, subjects: [`bids.${p}`], num_replicas: 3 })
  const encoder = new TextEncoder()
  const acks: number[] = []
  let slowestMs = 0
  let next = 0
  let running = true
  const worker = async (w: number) => {
    let p = w % PARTITIONS
    while (running) {
      const id = next++
      const first = performance.now()
      for (;;) {
        try {
          await js.publish(`bids.${p}`, encoder.encode(String(id)), { msgID: `bid-${id}` })
          const at = performance.now()
          acks.push(at)
          slowestMs = Math.max(slowestMs, at - first)
          break
        } catch {
          p = (p + 1) % PARTITIONS
        }
      }
    }
  }
  const writers = Array.from({ length: WORKERS }, (_, w) => worker(w))
  await new Promise((resolve) => setTimeout(resolve, 3000))
  const leader = await engine.leaderOf(streams[0]!)
  const killedAt = performance.now()
  process.kill(leader.pid, 'SIGKILL')
  await new Promise((resolve) => setTimeout(resolve, 9000))
  running = false
  await Promise.all(writers)
  const after = [killedAt, ...acks.filter((t) => t >= killedAt).sort((a, b) => a - b)]
  let longestGapMs = 0
  for (let i = 1; i < after.length; i++) longestGapMs = Math.max(longestGapMs, after[i]! - after[i - 1]!)
  const seen = new Map<number, number>()
  const decoder = new TextDecoder()
  for (const name of streams) {
    const { state } = await jsm.streams.info(name)
    for (let seq = state.first_seq; seq <= state.last_seq; seq++) {
      const id = Number(decoder.decode((await jsm.streams.getMessage(name, { seq })).data))
      seen.set(id, (seen.get(id) ?? 0) + 1)
    }
  }
  await nc.close()
  return { partitions: PARTITIONS, longestGapMs: Math.round(longestGapMs), slowestMs: Math.round(slowestMs), acknowledged: acks.length, held: seen.size, twice: [...seen.values()].filter((n) => n > 1).length }
}
