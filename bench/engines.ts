// Benchmark: issue 28's engine prototype. The same work on each candidate engine for oohbid's system of record: a bid
// (the benchmarks' BidResponse) parsed by a uWS front and answered only once a quorum of three members holds it, a
// NATS JetStream stream of three replicas or a PostgreSQL primary with two standbys under quorum commit, all on this
// machine. Beside them, in the same run, the bare uWS reply and the durable floor (one local LMDB commit). CPU per
// request counts every process: the front and every member of the engine, with their children (PostgreSQL's
// backends, WAL senders and receivers).
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { natsInstalled, startNatsCluster } from '../scripts/lib/engines/nats.js'
import { postgresInstalled, startPostgresCluster } from '../scripts/lib/engines/postgres.js'
import type { LocalEngine } from '../scripts/lib/engines/local.js'
import { bidResponseBody } from './lib/bid-fixture.js'
import { natsPartitionedLoss, natsTrial, postgresTrial, type Trial } from './lib/engine-trials.js'
import { cpuMicros } from './lib/cpu.js'
import { measure, type Measurement } from './lib/load.js'
import { startBare, startDurable, startQuorumFront } from './lib/processes.js'
import { printTable, save } from './lib/report.js'

const seconds = Number(process.env.BENCH_SECONDS ?? 10)
const connections = Number(process.env.BENCH_CONNECTIONS ?? 50)
const body = bidResponseBody('bench-request-1', 'c2NyX2JlbmNofnNlYXR-Mn4x.bench-imp-tag01', 3.5, 'cr_bench')
const reply = '{"id":"bench-request-1","sandbox":false,"accepted":1,"rejected":0}'
const post = (url: string) => ({ url: `${url}/openrtb/v2/bid`, method: 'POST' as const, body, headers: { 'content-type': 'application/json' }, connections, pipelining: 1, duration: seconds, timeout: 5 })
console.log(`the engine prototype: a bid answered once a quorum of 3 holds it, body ${body.length} bytes, ${connections} connections, -p 1, ${seconds} s per run`)

const rows: Measurement[] = []
/** CPU of the engine's members alone over a run, per request, to show the front's share apart. */
const engineShare = new Map<string, number>()
const bare = await startBare(reply)
rows.push(await measure('bare uWS (constant)', post(bare.url), bare.child.pid))
await bare.stop()
const floor = await startDurable(reply, 1)
rows.push(await measure('durable floor: uWS + parse + one LMDB put', post(floor.url), floor.child.pid))
await floor.stop()

/** A started engine: where the front writes, and the trials beyond appends bound to it (they kill a member). */
interface Started {
  engine: LocalEngine
  writeUrls: string[]
  trial: () => Promise<Trial>
}
interface Candidate {
  name: string
  kind: 'nats' | 'postgres'
  installed: boolean
  start: (dir: string) => Promise<Started>
}
const candidates: Candidate[] = [
  {
    name: 'NATS JetStream 2.9, stream of 3 replicas',
    kind: 'nats',
    installed: natsInstalled(),
    start: async (dir) => { const engine = await startNatsCluster(dir, 3); return { engine, writeUrls: engine.urls, trial: () => natsTrial(engine) } }
  },
  {
    name: 'PostgreSQL 15, primary + 2 standbys, quorum commit',
    kind: 'postgres',
    installed: postgresInstalled(),
    start: async (dir) => { const engine = await startPostgresCluster(dir, 3); return { engine, writeUrls: [engine.primary], trial: () => postgresTrial(engine) } }
  }
]
const trials: Array<[string, Trial]> = []
const measured: string[] = []
for (const { name, kind, installed, start } of candidates) {
  if (!installed) {
    console.log(`  ${name}: skipped, not installed (apt-get install ${kind === 'nats' ? 'nats-server' : 'postgresql-15'})`)
    continue
  }
  const dir = mkdtempSync(join(tmpdir(), `oohbid-engine-${kind}-`))
  const { engine, writeUrls, trial } = await start(dir)
  try {
    for (const batch of ['request', 'turn'] as const) {
      const label = `${name}, ${batch === 'request' ? 'a write a bid' : 'a write a turn'}`
      const front = await startQuorumFront(kind, writeUrls, batch, reply)
      // A short warm-up: the stream or table is created and the members' caches filled before the measured run.
      await measure(`${label} (warm-up)`, { ...post(front.url), duration: 2 }, front.child.pid)
      const members = engine.members().map((m) => m.pid)
      const before = cpuMicros(members)
      const m = await measure(label, post(front.url), [front.child.pid!, ...members])
      const after = cpuMicros(members)
      if (before !== undefined && after !== undefined && m.rps > 0) engineShare.set(label, Math.round((after - before) / (m.rps * seconds)))
      rows.push(m)
      measured.push(label)
      await front.stop()
    }
    trials.push([name, await trial()])
  } finally {
    await engine.stop()
    rmSync(dir, { recursive: true, force: true })
  }
}
let partitioned = ''
if (natsInstalled()) {
  const dir = mkdtempSync(join(tmpdir(), 'oohbid-engine-partitions-'))
  const engine = await startNatsCluster(dir, 3)
  try {
    const r = await natsPartitionedLoss(engine)
    partitioned = `\nNATS JetStream, bids appended by 16 writers to ${r.partitions} streams of 3 replicas, each writer moving to the next stream after 250 ms without an acknowledgement, a stream's leader killed 3 s in: the longest stretch without an acknowledged bid from the kill on ${r.longestGapMs} ms, the slowest bid ${r.slowestMs} ms from its first try to its acknowledgement; ${r.acknowledged} acknowledged, ${r.held} held by the survivors (${r.twice} held twice: an append that timed out had landed, then went to another stream)`
  } finally {
    await engine.stop()
    rmSync(dir, { recursive: true, force: true })
  }
}
const table = printTable('The engine prototype: a bid acknowledged once a quorum holds it (same run, loopback, one machine)', rows)
const floorRow = rows.find((r) => r.name.startsWith('durable floor'))!
const note = measured.map((name) => {
  const r = rows.find((row) => row.name === name)
  if (r === undefined || r.cpuUs === undefined) return `${name}: no figure`
  return `${name}: ${r.cpuUs} us of CPU a bid (${(r.cpuUs / floorRow.cpuUs!).toFixed(2)}x the floor), of which the engine's members ${engineShare.get(name) ?? '-'} us; ${r.rps} bids/s (${(r.rps / floorRow.rps).toFixed(2)}x the floor's), p99 ${r.p99} ms`
}).join('\n')
const trialTable = [
  '',
  'Besides appends, on the same clusters after the runs above: a change (a key revoked) written through one member and seen by a reader elsewhere, 200 changes one after another; 1,000 spots each claimed at the same moment by three claimers (one through each member, or three clients of the primary); then a member killed with kill -9 after 1,000 acknowledged writes, writes retried until one is acknowledged again, and the acknowledged writes counted on the survivors.',
  '',
  '| engine | change seen, p50 ms | p99 ms | reader | spots with one winner | claim p99 ms | member killed | writes back after | acknowledged | held by the survivors | how |',
  '|---|---|---|---|---|---|---|---|---|---|---|',
  ...trials.map(([name, t]) => `| ${name} | ${t.changeP50} | ${t.changeP99} | ${t.reader} | ${t.claimedOnce} of 1000 | ${t.claimP99} | ${t.lost} | ${t.writesBackMs} ms | ${t.acknowledged} | ${t.held} | ${t.note} |`)
].join('\n')
console.log(note + '\n' + trialTable + partitioned)
save('engines', 'The engine prototype: CPU per bid acknowledged by a quorum', rows, table + '\n\n' + note + '\n' + trialTable + '\n' + partitioned)
