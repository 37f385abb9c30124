import { iso } from '../clock.js'
import type { Campaign } from '../generated/types.js'
import { runOnce } from '../store/rewrite.js'
import type { Store } from '../store/store.js'
import type { CampaignRecord } from './records.js'

// What campaigns delivered and spent, a row per campaign and node ([campaign_id, node]). On a cluster every node
// records the plays it serves and the exchange wins it bills; had they all rewritten the campaign's row, a play on one
// node would write back the status it read and undo a pause made through another a moment before, and two plays at
// once would each lose the other's count.

/** The UTC date of a clock reading: the day a day's spend counts for. */
function dayOf (now: number): string {
  return iso(now).slice(0, 10)
}

/** A campaign's delivery over every node: impressions, spend (all and on now's UTC day), first impression. */
export function deliveredOf (store: Store, campaignId: string, now = 0): { impressions: number, spent_micros: number, day_spent_micros: number, leased_micros: number, started_at?: string } {
  const day = dayOf(now)
  let impressions = 0
  let spent = 0
  let today = 0
  let leased = 0
  let started: string | undefined
  for (const { value } of store.campaignDelivery.getRange({ start: [campaignId], end: [campaignId + '\u0000'] } as never)) {
    impressions += value.impressions
    spent += value.spent_micros
    leased += value.leased_micros ?? 0
    if (value.day === day) today += value.day_spent_micros
    if (value.impressions > 0 && (started === undefined || value.started_at < started)) started = value.started_at
  }
  return { impressions, spent_micros: spent, day_spent_micros: today, leased_micros: leased, ...(started !== undefined ? { started_at: started } : {}) }
}

/** A campaign as its seat sees it: its record with what it delivered. */
export function campaignView (store: Store, { seat_id: _seat, started_at: _started, ...c }: CampaignRecord): Campaign {
  const { impressions, spent_micros: spent } = deliveredOf(store, c.campaign_id)
  return { ...c, impressions, spent_usd: spent / 1e6 }
}

/** Adds impressions and what they cost to this node's delivery of the campaign. Call inside Store.write. */
export function addDelivery (store: Store, campaignId: string, impressions: number, costMicros: number, now: number): void {
  const key: [string, string] = [campaignId, store.node]
  const mine = store.campaignDelivery.get(key)
  const day = dayOf(now)
  store.campaignDelivery.putSync(key, {
    ...mine,
    impressions: (mine?.impressions ?? 0) + impressions,
    spent_micros: (mine?.spent_micros ?? 0) + costMicros,
    day,
    day_spent_micros: (mine?.day === day ? mine.day_spent_micros : 0) + costMicros,
    // A row a lease made, or a spend without impressions, has no first impression yet.
    started_at: mine !== undefined && mine.impressions > 0 ? mine.started_at : iso(now)
  })
}

/** A cluster node: what this node may still spend of the campaign, its leases less its spend. */
export function leasedLeft (store: Store, campaignId: string): number {
  const mine = store.campaignDelivery.get([campaignId, store.node])
  return (mine?.leased_micros ?? 0) - (mine?.spent_micros ?? 0)
}

/**
 * A cluster node: gives up what it holds unspent of the campaign's budget, to be granted to another node (src/cluster/
 * budget-grants.ts), and answers how much that was. Its lease is lowered to its spend first, so nothing given up is
 * spent here after; the grant it came from keeps its place (leased_seq). Call inside Store.write.
 */
export function giveUpLease (store: Store, campaignId: string): number {
  const left = leasedLeft(store, campaignId)
  if (left <= 0) return 0
  const key: [string, string] = [campaignId, store.node]
  const mine = store.campaignDelivery.get(key)!
  store.campaignDelivery.putSync(key, { ...mine, leased_micros: mine.spent_micros })
  return left
}

/**
 * A cluster node: the campaigns of which it holds part of the budget unspent. Reads every campaign's rows: once, at
 * start (src/cluster/budget-grants.ts follows the campaigns it asks for from then on).
 */
export function unspentLeases (store: Store): string[] {
  const out: string[] = []
  for (const { key: [campaignId, node] } of store.campaignDelivery.getRange()) if (node === store.node && leasedLeft(store, campaignId) > 0) out.push(campaignId)
  return out
}

/** A cluster node: what it has spent of the campaign's budget, and what it holds of it unspent. */
export function leaseOf (store: Store, campaignId: string): { spent: number, left: number } {
  return { spent: store.campaignDelivery.get([campaignId, store.node])?.spent_micros ?? 0, left: leasedLeft(store, campaignId) }
}

/**
 * A cluster node: adds a part of the campaign's budget granted to this node at seq of the grants' log, unless a grant
 * at or past seq was added already (the log applied again from its start, by a node that lost its disk and kept its
 * id). Call inside Store.write.
 */
export function addLease (store: Store, campaignId: string, micros: number, seq: number, now: number): void {
  const key: [string, string] = [campaignId, store.node]
  const mine = store.campaignDelivery.get(key)
  if (mine?.leased_seq !== undefined && seq <= mine.leased_seq) return
  store.campaignDelivery.putSync(key, { impressions: 0, spent_micros: 0, day: dayOf(now), day_spent_micros: 0, started_at: iso(now), ...mine, leased_micros: (mine?.leased_micros ?? 0) + micros, leased_seq: seq })
}

/**
 * Moves what an earlier version counted in each campaign's own row, and the spend and today's spend it kept in the
 * exchange path's ledger beside it, into a delivery row of this node, once.
 */
export function adoptCampaignDelivery (store: Store): void {
  runOnce(store, 'campaign_delivery', () => store.write(() => {
    for (const { key, value } of store.campaigns.getRange()) {
      const { impressions, spent_usd: spentUsd, ...rest } = value as CampaignRecord & { impressions?: number, spent_usd?: number }
      const started = value.started_at
      const ledger = store.ledgers.get(key) as { spent_micros?: number, day?: string, day_spent_micros?: number } | undefined
      // The ledger also counted a win billed after its campaign had ended, which the campaign's row did not.
      const spent = Math.max(Math.round((spentUsd ?? 0) * 1e6), ledger?.spent_micros ?? 0)
      if ((impressions ?? 0) > 0 || spent > 0) {
        store.campaignDelivery.putSync([key, store.node], { impressions: impressions ?? 0, spent_micros: spent, day: ledger?.day ?? '', day_spent_micros: ledger?.day_spent_micros ?? 0, started_at: started ?? value.created_at })
      }
      if (impressions !== undefined || spentUsd !== undefined) store.campaigns.putSync(key, rest)
    }
  }))
}
