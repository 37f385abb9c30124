import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Test } from 'tap'
import { clusterInstalled, startLocalCluster, type LocalCluster, type LocalClusterOptions } from '../../scripts/lib/cluster.js'
import { resumeAll } from '../../scripts/lib/faults/pause.js'
import { eventually } from './eventually.js'
import { adImage } from './media.js'
import { inherited } from './process.js'
import { skipFile } from './required.js'
import { freshIp } from './service.js'

// oohbid on three nodes over NATS JetStream, behind HAProxy, as `npm run cluster` starts it (scripts/lib/cluster.ts),
// for test/cluster*.test.ts: a file each for what the cluster keeps right, a node lost, the engine's members lost and
// budgets spent by many nodes. Each file starts its own cluster; the test runner runs those files one at a time.

/** One HTTP exchange with a node or the front. */
export interface Reply { status: number, body: any, headers: Headers }

export type ClusterNode = LocalCluster['nodes'][number]

export interface TestCluster {
  cluster: LocalCluster
  /** The three nodes the cluster started with. */
  nodes: [ClusterNode, ClusterNode, ClusterNode]
  /** Where CI names a ClickHouse server for the nodes (one of its two runs), every node's analytics go there. */
  sharedClickHouse: string | undefined
  call (base: string, method: string, path: string, options?: { key?: string, body?: unknown, headers?: Record<string, string> }): Promise<Reply>
  onboard (base: string, seatId: string, headers?: Record<string, string>, extra?: Record<string, unknown>): Promise<Reply>
  /** GET /openrtb/v2/seat's status for a key through one node or the front. */
  seatStatus (base: string, key: string): Promise<number>
  /** The operator's call through one node. */
  admin (base: string, method: string, path: string, body?: unknown): Promise<Reply>
}

/**
 * Whether this file can run: where nats-server or haproxy is missing the file is skipped, saying so (or fails, where
 * .ci/run requires the cluster suite); answers false then.
 */
export function clusterAvailable (t: Test): boolean {
  const missing = clusterInstalled()
  if (missing === undefined) return true
  skipFile(t, 'cluster', `${missing}: the cluster tests run in CI (.ci/run)`)
  return false
}

/** What a file's cluster has of its own. */
export interface TestClusterOptions {
  /** Variables over the environment every node gets. */
  env?: Record<string, string>
  /** How a node differs (on a namespace host, its clock off: scripts/lib/faults/launch.ts). */
  launch?: LocalClusterOptions['launch']
  /**
   * How long a call waits for its answer: a node stopped or cut off answers nothing, and the outcome of a call that
   * gave up is unknown. Default: as long as it takes.
   */
  callTimeoutMs?: number
}

/**
 * A cluster of three nodes for this file, stopped at its end; any node a fault left stopped (SIGSTOP) is continued
 * first, since it would never exit. OOHBID_FAULTS_KEEP=1 keeps its directory, with each node's log, written at
 * OOHBID_TEST_LOG_LEVEL (warn unless set: info shows partitions taken on and served).
 */
export async function startTestCluster (t: Test, options: TestClusterOptions = {}): Promise<TestCluster> {
  const dir = mkdtempSync(join(tmpdir(), 'oohbid-cluster-'))
  // Each node's analytics in a chDB of its own, or, where CI names a ClickHouse server for it, every node's in one
  // database there.
  const sharedClickHouse = process.env.OOHBID_TEST_CLUSTER_CLICKHOUSE_URL === '' ? undefined : process.env.OOHBID_TEST_CLUSTER_CLICKHOUSE_URL
  const analytics = sharedClickHouse !== undefined ? { CLICKHOUSE_URL: sharedClickHouse, CLICKHOUSE_DATABASE: `cluster_test_${process.pid}_${Date.now()}` } : {}
  const env = { ...inherited(), ...analytics, HOT_THREADS: '1', LOG_LEVEL: process.env.OOHBID_TEST_LOG_LEVEL ?? 'warn', CLUSTER_ACK_TIMEOUT_MS: '2000', HEARTBEAT_TIMEOUT_SECONDS: '5', ALLOW_PRIVATE_CALLBACK_URLS: 'true', RESERVATION_HOLD_SECONDS: '10', PICKUP_SECONDS: '1', ANALYTICS_BATCH_SECONDS: '1', REPORT_CACHE_SECONDS: '0', ...options.env }
  const cluster = await startLocalCluster({ nodes: 3, dir, frontPort: 0, env, ...(options.launch !== undefined ? { launch: options.launch } : {}) })
  t.teardown(async () => {
    resumeAll()
    await cluster.stop()
    if (sharedClickHouse !== undefined) await fetch(sharedClickHouse, { method: 'POST', body: `DROP DATABASE IF EXISTS ${analytics.CLICKHOUSE_DATABASE!}` })
    if (process.env.OOHBID_FAULTS_KEEP === '1') t.comment(`kept ${dir} (OOHBID_FAULTS_KEEP=1): each node's log is node-N/node.log`)
    else rmSync(dir, { recursive: true, force: true })
  })
  const { callTimeoutMs } = options
  const call: TestCluster['call'] = async (base, method, path, options = {}) => {
    const headers: Record<string, string> = { ...options.headers }
    if (options.key !== undefined) headers.authorization = `Bearer ${options.key}`
    if (options.body !== undefined) headers['content-type'] = 'application/json'
    const res = await fetch(base + path, { method, headers, ...(callTimeoutMs !== undefined ? { signal: AbortSignal.timeout(callTimeoutMs) } : {}), ...(options.body !== undefined ? { body: JSON.stringify(options.body) } : {}) })
    const text = await res.text()
    let body: unknown = text
    try { body = JSON.parse(text) } catch {}
    return { status: res.status, body, headers: res.headers }
  }
  return {
    cluster,
    nodes: cluster.nodes.slice(0, 3) as TestCluster['nodes'],
    sharedClickHouse,
    call,
    onboard: (base, seatId, headers = {}, extra = {}) => call(base, 'POST', '/openrtb/v2/onboard', {
      body: { company_name: `${seatId} Media`, seat_id: seatId, contact_email: `buyer@${seatId.replace(/[^a-z0-9]/gi, '').toLowerCase()}.example`, ...extra },
      headers: { 'x-forwarded-for': freshIp(), ...headers }
    }),
    seatStatus: async (base, key) => (await call(base, 'GET', '/openrtb/v2/seat', { key })).status,
    admin: (base, method, path, body) => call(base, method, path, { key: cluster.adminToken, ...(body !== undefined ? { body } : {}) })
  }
}

/**
 * Polls every node until each answers want for key; the milliseconds that took, or undefined past limitMs. A key
 * may make 100 account calls a minute on each node: long waits poll slower.
 */
export async function everyNode (t: Test, c: TestCluster, nodes: Array<{ url: string }>, key: string, want: number, limitMs: number, everyMs = 10): Promise<number | undefined> {
  const started = performance.now()
  const statuses = await eventually(t, `every node answers ${want} for the key`, () => Promise.all(nodes.map((n) => c.seatStatus(n.url, key))), { within: limitMs, every: everyMs, until: (s) => s.every((x) => x === want) })
  return statuses.every((x) => x === want) ? performance.now() - started : undefined
}

/**
 * A creative approved by the operator's review through one node, once that node holds the creative's row: whether it
 * is approved now (moderation may have approved it first, which the review answers 409 with the status).
 */
export async function approveCreative (t: Test, c: TestCluster, base: string, creativeId: string): Promise<boolean> {
  const approved = (r: Reply) => r.status === 200 || (r.status === 409 && r.body?.status === 'approved')
  return approved(await eventually(t, `${creativeId} approved on review`, () => c.admin(base, 'POST', `/admin/v1/creatives/${creativeId}/review`, { decision: 'approved', reason: 'cluster test' }), { every: 100, until: approved }))
}

/** Waits until each of the nodes shows the creative approved (its row reaches each node milliseconds after review). */
export async function approvedEverywhere (t: Test, c: TestCluster, nodes: Array<{ id: string, url: string }>, key: string, creativeId: string): Promise<void> {
  for (const node of nodes) await eventually(t, `${node.id} shows ${creativeId} approved`, async () => (await c.call(node.url, 'GET', `/openrtb/v2/creatives/${creativeId}`, { key })).body.data?.status, { until: (s) => s === 'approved' })
}

/**
 * A DSP seat onboarded through the front and approved, its limits raised for load, with a creative approved and known
 * to every node.
 */
export async function approvedBidder (t: Test, c: TestCluster, seat: string, through: { approvedThrough: string, writesThrough: string }, onboarding: Record<string, unknown> = {}): Promise<{ seat: string, key: string, creativeId: string }> {
  const key = (await c.onboard(c.cluster.frontUrl, seat, {}, onboarding)).body.data.api_key.key as string
  t.equal((await c.admin(through.approvedThrough, 'POST', `/admin/v1/seats/${seat}/approve`, {})).status, 200, `the DSP seat ${seat} approved`)
  t.equal((await c.admin(through.writesThrough, 'PUT', `/admin/v1/seats/${seat}/rate-limits`, { limits: { inventory: 100000, bidding: 100000, creatives: 100000, account: 100000, campaigns: 100000, reporting: 100000 }, reason: 'cluster test' })).status, 200)
  const creativeId = (await c.call(through.writesThrough, 'POST', '/openrtb/v2/creatives', { key, body: { name: `${seat} ad`, content_type: 'image/png', creative_url: `https://assets.invalid/${seat}.png` } })).body.data.creative_id as string
  await approveCreative(t, c, through.approvedThrough, creativeId)
  await approvedEverywhere(t, c, c.nodes, key, creativeId)
  return { seat, key, creativeId }
}

/**
 * The bytes a node serves for an approved creative, once it has them: a node answers 503 in the moment between a
 * creative's row and its bytes arriving from the engine; a node that just joined fetches them in the background.
 */
export async function assetOn (t: Test, base: string, creativeId: string): Promise<Buffer> {
  const res = await eventually(t, `the bytes of ${creativeId} at ${base}`, () => fetch(`${base}/assets/${creativeId}`), { within: 20_000, until: (r) => r.status === 200 })
  return Buffer.from(await res.arrayBuffer())
}

/** The analytics process a node forked (tests kill it to show no funnel event is lost or doubled). */
export function analyticsPidOf (nodePid: number): number | undefined {
  for (const child of readFileSync(`/proc/${nodePid}/task/${nodePid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number)) {
    if (readFileSync(`/proc/${child}/cmdline`, 'utf8').startsWith('oohbid-analytics\0')) return child
  }
  return undefined
}

/** A screen of the Austin gyms, as the cluster files register them. */
export const gymDevice = (i: number | string) => ({ device_id: typeof i === 'number' ? `d-${i}` : i, name: `Screen ${i}`, display: { width: 1920, height: 1080 }, location: { lat: 30.2672, lng: -97.7431, venue_type: 'gym', city: 'Austin', state: 'TX', country: 'US' }, capabilities: { fein: true } })

export interface ClusterScreens {
  /** The operator's partner key. */
  partner: string
  devices: Array<{ device_id: string, screen_id: string, embed_url: string }>
}

/**
 * The screens the files below play on, as a fixture: an operator's 31 Austin gyms (d-0 to d-30) registered through
 * node-1, once every node lists them. test/cluster.test.ts registers the same screens through several nodes and
 * asserts each step.
 */
export async function gymScreens (t: Test, c: TestCluster): Promise<ClusterScreens> {
  const registered = await c.call(c.cluster.frontUrl, 'POST', '/v1/partner/register', { body: { name: 'Everywhere Screens', slug: 'everywhere-screens', contact_email: 'ops@everywhere.example', partner_type: 'screen_operator', domain: 'everywhere.example' }, headers: { 'x-forwarded-for': freshIp() } })
  t.equal(registered.status, 201, 'a screen operator registered')
  const partner = registered.body.data.api_key.key as string
  const batch = await c.call(c.nodes[0].url, 'POST', '/v1/partner/devices/batch', { key: partner, body: { devices: Array.from({ length: 31 }, (_, i) => gymDevice(i)) } })
  t.equal(batch.status, 200, 'its 31 screens registered')
  const listed = async (base: string) => (await c.call(base, 'GET', '/v1/partner/devices?limit=100', { key: partner })).body.data?.devices as ClusterScreens['devices'] | undefined
  for (const node of c.nodes) await eventually(t, `${node.id} lists the 31 screens`, () => listed(node.url), { until: (d) => d?.length === 31 })
  return { partner, devices: (await listed(c.nodes[0].url))! }
}

/**
 * A buyer's uploaded creative, as a fixture: registered through node-1, its bytes uploaded through node-2 and
 * confirmed through node-3, approved, and served by every node. test/cluster-market.test.ts makes the same one and asserts
 * each step.
 */
export async function uploadedAd (t: Test, c: TestCluster, seat = 'creative-buyer'): Promise<{ id: string, bytes: Buffer, key: string }> {
  const key = (await c.onboard(c.cluster.frontUrl, seat)).body.data.api_key.key as string
  t.equal((await c.admin(c.nodes[0].url, 'PUT', `/admin/v1/seats/${seat}/rate-limits`, { limits: { creatives: 100000, inventory: 100000, account: 100000, campaigns: 100000, deals: 100000, reporting: 100000 }, reason: 'cluster test' })).status, 200)
  const created = await c.call(c.nodes[0].url, 'POST', '/openrtb/v2/creatives', { key, body: { name: 'Everywhere ad', content_type: 'image/png', mode: 'upload' } })
  const id = created.body.data.creative_id as string
  const bytes = await adImage('EVERYWHERE', 'Three nodes, one ad')
  t.equal((await fetch(c.nodes[1].url + new URL(created.body.data.upload.url as string).pathname, { method: 'PUT', headers: { 'content-type': 'image/png' }, body: bytes })).status, 200, 'an ad uploaded')
  t.equal((await c.call(c.nodes[2].url, 'POST', `/openrtb/v2/creatives/${id}/confirm`, { key })).status, 200)
  const moderated = await eventually(t, 'the ad moderated', async () => (await c.call(c.nodes[0].url, 'GET', `/openrtb/v2/creatives/${id}`, { key })).body.data?.status as string | undefined, { within: 30_000, every: 100, until: (s) => s !== undefined && s !== 'pending_moderation' })
  if (moderated !== 'approved') await approveCreative(t, c, c.nodes[0].url, id)
  await approvedEverywhere(t, c, c.nodes, key, id)
  for (const node of c.nodes) await assetOn(t, node.url, id)
  return { id, bytes, key }
}

/**
 * Which node owns each log, as each of the nodes says of itself on /readyz (checks.logs): log -> the nodes claiming
 * it, with the epoch each names. A node that does not answer claims nothing.
 */
export async function logOwners (c: TestCluster, nodes: Array<{ id: string, url: string }>): Promise<Map<string, Array<{ node: string, epoch: number }>>> {
  const owners = new Map<string, Array<{ node: string, epoch: number }>>()
  for (const n of nodes) {
    const said = await c.call(n.url, 'GET', '/readyz').then((r) => r.body?.data?.checks?.logs as string | undefined, () => undefined)
    for (const [, log, epoch] of (said ?? '').matchAll(/([A-Z_0-9]+)@(\d+)/g)) owners.set(log!, [...(owners.get(log!) ?? []), { node: n.id, epoch: Number(epoch) }])
  }
  return owners
}

/** How many of the logs each node follows have owners, as node-1 says on /readyz (the proofs' log has none). */
export async function logsFollowed (c: TestCluster): Promise<number> {
  const said = (await c.call(c.nodes[0].url, 'GET', '/readyz')).body.data.checks.logs as string
  return Number(/ of the (\d+) logs/.exec(said)?.[1]) - Number(/; (\d+) never owned/.exec(said)?.[1] ?? 0)
}

/** CLUSTER_PARTITIONS as the test cluster's nodes have it (the default). */
export const PARTITIONS = 16

/** The partitions a node's /readyz says it decides the spots of (checks.spots). */
export function servedPartitions (spots: string): number[] {
  const listed = /partitions: (.*)$/.exec(spots)?.[1]
  return listed === undefined ? [] : listed.split(', ').map(Number)
}

/**
 * Waits until the nodes given decide the spots of every partition between them (each node's served list, in their
 * order): a partition whose owner was lost or handed over is served again once its new owner has read its bids.
 */
export async function untilServed (t: Test, c: TestCluster, nodes: Array<{ id: string, url: string }>, what = 'every partition served', also: (served: number[][]) => boolean = () => true): Promise<number[][]> {
  return await eventually(t, what, () => Promise.all(nodes.map(async (n) => servedPartitions((await c.call(n.url, 'GET', '/readyz')).body.data?.checks?.spots as string ?? ''))), { within: 45_000, every: 250, until: (all) => new Set(all.flat()).size === PARTITIONS && all.flat().length === PARTITIONS && also(all) })
}
