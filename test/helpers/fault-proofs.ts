import type { Test } from 'tap'
import { checkProofs, type ChainRead, type ProveArgs } from '../../scripts/lib/faults/checker.js'
import type { History } from '../../scripts/lib/faults/history.js'
import type { TestCluster } from './cluster.js'
import { eventually } from './eventually.js'
import { holdChecks } from './fault-checks.js'
import { nodeClients, untilKnown } from './fault-retries.js'

// The fault suite's plays (issue 47): a screen operator's devices reporting plays through chosen nodes while a fault is
// injected, each play's answer recorded in a history, and every node's proof chains read back once the cluster has
// healed, held to the proof invariants (scripts/lib/faults/checker.ts checkProofs).

/** What the plays are of: the operator's key, its devices with their screens, the ad played and its buyer's key. */
export interface Plays {
  partnerKey: string
  devices: Array<{ device: string, screen: string }>
  adId: string
  buyerKey: string
}

/**
 * The plays of a booking scenario's setting (bookingSetting, test/helpers/fault-bookings.ts): its screens' devices, of
 * an ad its first seat makes through node-1.
 */
export async function playSetting (t: Test, c: TestCluster, setting: { screens: string[], seats: Array<{ key: string }>, partner: { key: string, devices: string[] } }): Promise<Plays> {
  const buyerKey = setting.seats[0]!.key
  const ad = await c.call(c.nodes[0].url, 'POST', '/openrtb/v2/creatives', { key: buyerKey, body: { name: 'Fault ad', content_type: 'image/png', creative_url: 'https://assets.invalid/fault.png' } })
  t.equal(ad.status, 201, 'an ad the screens play')
  return { partnerKey: setting.partner.key, devices: setting.partner.devices.map((device, i) => ({ device, screen: setting.screens[i]! })), adId: ad.body.data.creative_id as string, buyerKey }
}

/**
 * Starts one client a node, each reporting plays one at a time on every device in turn, so that each screen's plays
 * go through every node at once; a play whose answer is unknown (none, a 5xx) is sent again, the same play, through
 * the same node, up to three times a second apart. Until stop(), which resolves once every client has had its last
 * answer.
 */
export function playClients (c: TestCluster, history: History, nodes: Array<{ id: string, url: string }>, plays: Plays, prefix: string): { stop: () => Promise<void> } {
  return nodeClients(nodes, async (node, n) => {
    const { device, screen } = plays.devices[n % plays.devices.length]!
    const args: ProveArgs = { impressionId: `${prefix}-${node.id}-${n}`, screen }
    const play = { adId: plays.adId, impressionId: args.impressionId, deviceId: device, duration: 15, completed: true, timestamp: Date.now() - 1000 }
    await untilKnown(history, `${node.id}/play`, node.id, 'prove', args, () => c.call(node.url, 'POST', '/v1/partner/impressions', { key: plays.partnerKey, body: { impressions: [play] } }), 3)
  })
}

/** Every proof of the screens as each node lists them, every page. */
async function chainReads (c: TestCluster, plays: Plays): Promise<ChainRead[]> {
  const reads: ChainRead[] = []
  for (const node of c.nodes) {
    for (const { screen } of plays.devices) {
      const proofs: ChainRead['proofs'] = []
      let cursor: string | undefined
      do {
        const page = (await c.call(node.url, 'GET', `/v1/advertiser/proof/proofs?screen_id=${screen}&limit=1000${cursor !== undefined ? `&cursor=${encodeURIComponent(cursor)}` : ''}`, { key: plays.buyerKey })).body.data as { proofs: ChainRead['proofs'], cursor: { next: string | null } }
        proofs.push(...page.proofs)
        cursor = page.cursor.next ?? undefined
      } while (cursor !== undefined)
      reads.push({ node: node.id, screen, proofs })
    }
  }
  return reads
}

/**
 * Reads every node's chains until they hold what was acknowledged and agree (a play proposed again after the fault is
 * placed within seconds of it: src/proof/proof-log.ts), then checks the proof invariants on the last reads.
 */
export async function checkProofsConverged (t: Test, c: TestCluster, history: History, plays: Plays): Promise<void> {
  const violations = (reads: ChainRead[]) => checkProofs(history, reads).reduce((n, check) => n + check.violations.length, 0)
  const reads = await eventually(t, 'every node lists the acknowledged plays\' proofs in one chain a screen, alike', () => chainReads(c, plays), { within: 60_000, every: 1000, until: (r) => violations(r) === 0 })
  const checks = checkProofs(history, reads)
  holdChecks(t, checks)
  const proved = history.select<ProveArgs>('prove')
  const places = reads.filter((r) => r.node === c.nodes[0].id).reduce((n, r) => n + r.proofs.length, 0)
  t.comment(`plays: ${new Set(proved.filter((o) => o.outcome === 'ok').map((o) => o.args.impressionId)).size} acknowledged, ${proved.filter((o) => o.outcome === 'unknown').length} answers unknown; ${places} places in ${plays.devices.length} screens' chains on ${c.nodes.length} nodes`)
}
