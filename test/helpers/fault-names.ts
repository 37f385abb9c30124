import type { Test } from 'tap'
import { checkNames, type OnboardArgs, type SeatRead } from '../../scripts/lib/faults/checker.js'
import type { History } from '../../scripts/lib/faults/history.js'
import type { TestCluster } from './cluster.js'
import { holdChecks } from './fault-checks.js'
import { nodeClients, untilKnown } from './fault-retries.js'

// The fault suite's names (issue 47): clients onboarding the same seat_ids through chosen nodes while a fault is
// injected, each attempt with an Idempotency-Key of its own, recorded in a history; then every acknowledged seat read
// back through every node and held to the names' invariants (scripts/lib/faults/checker.ts checkNames).

/**
 * Starts one client a node, each onboarding the seat_ids `<prefix>-<i>` in turn, i from 0 below `names`, so that the
 * clients on different nodes ask for the same names at about the same time. An outcome unknown (no answer, a 5xx) is
 * sent again with the same key, through the same node, up to three times a second apart; a refusal moves on to the
 * next name. Until the names run out or stop(), which resolves once every client has had its last answer.
 */
export function onboardingClients (c: TestCluster, history: History, nodes: Array<{ id: string, url: string }>, prefix: string, names: number): { stop: () => Promise<void> } {
  return nodeClients(nodes, async (node, i) => {
    const name = `${node.id}/onboard`
    const seatId = `${prefix}-${i}`
    const args: OnboardArgs = { seatId, key: `${name}/${seatId}` }
    await untilKnown(history, name, node.id, 'onboard', args, () => c.onboard(node.url, seatId, { 'idempotency-key': args.key }), 3)
  }, names)
}

/** Reads every acknowledged seat back through every node with the key it was given, and checks the names' invariants. */
export async function checkNamesConverged (t: Test, c: TestCluster, history: History): Promise<void> {
  const acked = [...new Map(history.select<OnboardArgs>('onboard', 'ok').map((o) => [o.args.seatId, o])).values()]
  const reads: SeatRead[] = []
  for (const o of acked) {
    const key = (o.body as { data: { api_key: { key: string } } }).data.api_key.key
    for (const n of c.nodes) {
      const r = await c.call(n.url, 'GET', '/openrtb/v2/seat', { key })
      reads.push({ node: n.id, seatId: o.args.seatId, status: r.status, seatIdRead: r.body?.data?.seat?.seat_id })
    }
  }
  const checks = checkNames(history, reads)
  holdChecks(t, checks)
}
