import type { Test } from 'tap'
import { checkRegisters, type RegisterArgs, type RegisterRead } from '../../scripts/lib/faults/checker.js'
import type { History } from '../../scripts/lib/faults/history.js'
import type { TestCluster } from './cluster.js'
import { eventually } from './eventually.js'
import { holdChecks } from './fault-checks.js'
import { nodeClients, untilKnown } from './fault-retries.js'

// The fault suite's records (issue 47): one seat's custom rate limits rewritten under the seat's lock by a client a
// node, each merging a group of its own into what it read (PUT /admin/v1/seats/:id/rate-limits), rising values one at
// a time, every answer recorded; then the seat read back through every node and held to the registers' invariants
// (scripts/lib/faults/checker.ts checkRegisters). A node paused or cut off past the lock's 30 s, waking with a rewrite
// it decided on what it read before, would bring the other client's group back to an older value.

/** A client: the node it sends to, and the group of the seat's limits it writes (one of CustomRateLimits'). */
export interface RewriteClient { node: { id: string, url: string }, register: 'bidding' | 'inventory' | 'creatives' | 'campaigns' | 'deals' | 'reporting' | 'account' }

/**
 * Starts the clients, each rewriting its group of the seat's limits to 1,000,000 + n, n = 0, 1, ... (no request of
 * the suite comes near such limits), each rewrite with an Idempotency-Key of its own, sent again while its outcome is
 * unknown (up to three times a second apart); until stop(), which resolves once every client has had its last answer.
 * Several clients on one node queue for the seat's lock there, so that the node holds it most of the time.
 */
export function rewriteClients (c: TestCluster, history: History, clients: RewriteClient[], seat: string, prefix: string): { stop: () => Promise<void> } {
  return nodeClients(clients.map(({ node, register }) => ({ ...node, register })), async ({ id, url, register }, n) => {
    const args: RegisterArgs = { record: seat, register, value: 1_000_000 + n, key: `${prefix}/${id}/${register}/${n}` }
    await untilKnown(history, `${id}/rewrite/${register}`, id, 'rewrite', args, () => c.call(url, 'PUT', `/admin/v1/seats/${seat}/rate-limits`, { key: c.cluster.adminToken, body: { limits: { [register]: args.value }, reason: 'fault suite' }, headers: { 'idempotency-key': args.key } }), 3)
  })
}

/**
 * Reads the seat through every node, once they agree (a rewrite the last moments acknowledged is on its way to the
 * others), and checks the registers' invariants; the rewrites refused because their lock had passed to another
 * request first (503, "held the record's lock too long") are counted.
 */
export async function checkRewrites (t: Test, c: TestCluster, history: History, seat: string): Promise<void> {
  const ops = history.select<RegisterArgs>('rewrite')
  const registers = [...new Set(ops.map((o) => o.args.register))]
  const readAll = async (): Promise<RegisterRead[]> => (await Promise.all(c.nodes.map(async (n) => {
    const limits = (await c.admin(n.url, 'GET', `/admin/v1/seats/${seat}`)).body?.data?.rate_limits as Record<string, number> | undefined
    return registers.map((register) => ({ node: n.id, record: seat, register, value: limits?.[register] }))
  }))).flat()
  const reads = await eventually(t, 'every node shows the seat\'s limits alike', readAll, { within: 30_000, every: 250, until: (rs) => registers.every((g) => new Set(rs.filter((r) => r.register === g).map((r) => r.value)).size === 1) })
  const fenced = ops.filter((o) => JSON.stringify(o.body ?? '').includes('lock too long')).length
  t.comment(`rewrites under the seat's lock: ${ops.filter((o) => o.outcome === 'ok').length} acknowledged, ${ops.filter((o) => o.outcome === 'fail').length} refused, ${ops.filter((o) => o.outcome === 'unknown').length} unknown, ${fenced} of them refused where they would take effect (their lock had passed to another request)`)
  const said = new Map<string, number>()
  for (const o of ops) {
    if (o.outcome !== 'unknown') continue
    const what = `${o.node} ${o.status ?? o.error}: ${(o.body as { error?: string } | undefined)?.error ?? ''}`
    said.set(what, (said.get(what) ?? 0) + 1)
  }
  for (const [what, n] of said) t.comment(`  ${n} x ${what}`)
  holdChecks(t, checkRegisters(history, reads))
}
