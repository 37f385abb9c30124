import { iso } from '../clock.js'
import type { Campaign } from '../generated/types.js'
import { runOnce } from '../store/rewrite.js'
import type { Store } from '../store/store.js'
import type { CampaignDelivery, CampaignRecord } from './records.js'

// What campaigns delivered, a row per campaign and node ([campaign_id, node]). On a cluster every node records the
// plays it serves; had they all rewritten the campaign's row, a play on one node would write back the status it read
// and undo a pause made through another a moment before, and two plays at once would each lose the other's count.

/** A campaign's delivery over every node: impressions, spend, and when its first impression was recorded. */
export function deliveredOf (store: Store, campaignId: string): { impressions: number, spent_usd: number, started_at?: string } {
  let impressions = 0
  let micros = 0
  let started: string | undefined
  for (const { value } of store.campaignDelivery.getRange({ start: [campaignId], end: [campaignId + '\u0000'] } as never)) {
    impressions += value.impressions
    micros += Math.round(value.spent_usd * 1e6)
    if (started === undefined || value.started_at < started) started = value.started_at
  }
  return { impressions, spent_usd: micros / 1e6, ...(started !== undefined ? { started_at: started } : {}) }
}

/** A campaign as its seat sees it: its record with what it delivered. */
export function campaignView (store: Store, { seat_id: _seat, ...c }: CampaignRecord): Campaign {
  const { impressions, spent_usd } = deliveredOf(store, c.campaign_id)
  return { ...c, impressions, spent_usd }
}

/** Adds impressions and their cost to this node's delivery of the campaign. Call inside Store.write. */
export function addDelivery (store: Store, campaignId: string, impressions: number, costUsd: number, now: number): void {
  const key: [string, string] = [campaignId, store.node]
  const mine = store.campaignDelivery.get(key)
  store.campaignDelivery.putSync(key, {
    impressions: (mine?.impressions ?? 0) + impressions,
    spent_usd: Math.round(((mine?.spent_usd ?? 0) + costUsd) * 1e6) / 1e6,
    started_at: mine?.started_at ?? iso(now)
  })
}

/** Moves what an earlier version counted in each campaign's own row into delivery rows of this node, once. */
export function adoptCampaignDelivery (store: Store): void {
  runOnce(store, 'campaign_delivery', () => store.write(() => {
    for (const { key, value } of store.campaigns.getRange()) {
      const { impressions, spent_usd: spent, started_at: started, ...rest } = value as CampaignRecord & Partial<CampaignDelivery>
      if (impressions === undefined && spent === undefined && started === undefined) continue
      if ((impressions ?? 0) > 0 || (spent ?? 0) > 0) store.campaignDelivery.putSync([key, store.node], { impressions: impressions ?? 0, spent_usd: spent ?? 0, started_at: started ?? value.created_at })
      store.campaigns.putSync(key, rest)
    }
  }))
}
