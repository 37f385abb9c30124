// A media buy's packages going live: each becomes a campaign and placement once a creative of it is approved, at
// create time or later (the index of buys waiting for an approval, which the service's jobs run).
import { iso } from '../clock.js'
import type { CreativeWeight } from '../generated/types.js'
import { createCampaign } from '../campaigns/campaigns.js'
import { place, setRotation } from '../campaigns/placements.js'
import { seatCreativeByCrid } from '../creatives/register.js'
import type { CreativeRecord } from '../creatives/records.js'
import type { ScreenRecord } from '../inventory/records.js'
import type { Store } from '../store/store.js'
import type { BuyDeps } from './call.js'
import { saveBuy, waits } from './seat-buys.js'
import type { MediaBuyRecord, PackageRecord } from './records.js'

/** What a package's placement rotates among: each attached creative the seat has, at its weight (0: not played). */
function packageRotation (store: Store, buy: MediaBuyRecord, p: PackageRecord): CreativeWeight[] {
  return p.creative_ids.flatMap((id) => {
    const creative = seatCreativeByCrid(store, buy.seat_id, id)
    const weight = p.weights?.[id] ?? 1
    return creative !== undefined && weight > 0 ? [{ creative_id: creative.creative_id, weight }] : []
  })
}

/** A package's creatives changed: an active one's placement rotates among the new set from its next spot. */
export function rotate (store: Store, buy: MediaBuyRecord, p: PackageRecord): void {
  const a = p.assignment_id !== undefined ? store.assignments.get(p.assignment_id) : undefined
  if (a !== undefined) setRotation(store, a, packageRotation(store, buy, p))
}

/** The approved creative a package not yet activated would play, if it can be activated now. */
function readyCreative (store: Store, buy: MediaBuyRecord, p: PackageRecord, now: number): CreativeRecord | undefined {
  if (p.campaign_id !== undefined || p.paused || buy.paused || now >= Date.parse(buy.end_time)) return undefined
  return p.creative_ids.map((id) => seatCreativeByCrid(store, buy.seat_id, id)).find((c) => c?.status === 'approved')
}

/**
 * Turns each package that has an approved creative (the first approved of its creative_ids) into a campaign of the
 * seat and a placement of its booked spots, rotating among its creatives, that players pick up within
 * PICKUP_SECONDS. Call inside Store.write; answers whether anything changed.
 */
export function activate (deps: BuyDeps, buy: MediaBuyRecord, now: number): boolean {
  let changed = false
  buy.packages = buy.packages.map((p) => {
    const creative = readyCreative(deps.store, buy, p, now)
    if (creative === undefined) return p
    // The campaign carries the package's money (and a guaranteed one's goal); the placement plays it on the screens.
    const { campaign } = createCampaign(deps, buy.seat_id, {
      name: `${buy.buyer_ref} / ${p.package_id}`,
      creative_id: creative.creative_id,
      targeting: { screen_ids: p.screen_ids },
      budget_usd: p.budget,
      pacing: p.pacing,
      start_date: buy.start_date,
      end_date: buy.end_date,
      ...(p.sale === 'guaranteed' ? { goal_impressions: Math.max(1, p.impressions) } : {}),
      media_buy_id: buy.media_buy_id
    }, now)
    changed = true
    const screens = p.screen_ids.map((id) => deps.store.screens.get(id)).filter((s): s is ScreenRecord => s !== undefined)
    const line = { line: p.sale, cpm: p.rate, ...(p.sale !== 'guaranteed' ? { pacing: p.pacing } : {}), ...(p.dayparts !== undefined ? { dayparts: p.dayparts } : {}), ...(p.audience !== undefined ? { audience: p.audience } : {}), rotation: packageRotation(deps.store, buy, p) }
    const flight = { start: Date.parse(buy.start_time), end: Date.parse(buy.end_time) }
    const placed = place(deps, buy.seat_id, { creative_id: creative.creative_id, screen_ids: screens.map((s) => s.screen_id), start_date: buy.start_date, end_date: buy.end_date, spots_per_day: p.spots_per_day, campaign_id: campaign.campaign_id, flight, ...line }, screens, now, 'media_buy', { claim: p.claim })
    return { ...p, campaign_id: campaign.campaign_id, assignment_id: placed.assignment_id }
  })
  return changed
}

/** Media buys with a package waiting for its creative's approval, from the index, and the indexed ones that ended. */
function waitingBuys (store: Store, now: number): { waiting: MediaBuyRecord[], ended: string[] } {
  const waiting: MediaBuyRecord[] = []
  const ended: string[] = []
  for (const { key, value: end } of store.mediaBuysWaiting.getRange()) {
    if (end <= now) ended.push(key)
    else {
      const buy = store.mediaBuys.get(key)
      if (buy !== undefined) waiting.push(buy)
    }
  }
  return { waiting, ended }
}

/** Whether a waiting buy has a package whose creative is approved now. */
const ready = (store: Store, buy: MediaBuyRecord, now: number) => buy.packages.some((p) => readyCreative(store, buy, p, now) !== undefined)

/**
 * Indexes the waiting buys of a store kept before media_buys_waiting existed: run once at start, it finds nothing to
 * do once the index has been written.
 */
export function indexWaitingBuys (store: Store): number {
  if (store.mediaBuysWaiting.getKeysCount() > 0) return 0
  const waiting = [...store.mediaBuys.getRange()].filter(({ value }) => waits(value))
  if (waiting.length > 0) store.write(() => { for (const { key, value } of waiting) store.mediaBuysWaiting.putSync(key, Date.parse(value.end_time)) })
  return waiting.length
}

/** Whether activateMediaBuys has a package to activate now: a cluster node takes the catalog lock only then. */
export function mediaBuysDue (store: Store, now: number): boolean {
  return waitingBuys(store, now).waiting.some((buy) => ready(store, buy, now))
}

/**
 * Activates the packages of every media buy whose creative moderation has approved since (the supervisor runs it every
 * second; on a cluster node under the catalog lock, so that a package becomes one campaign). It reads only the buys
 * media_buys_waiting indexes, and writes only those with a package to activate; ended buys leave the index.
 */
export function activateMediaBuys (deps: BuyDeps, now: number): number {
  const { waiting, ended } = waitingBuys(deps.store, now)
  if (ended.length > 0) deps.store.write(() => { for (const key of ended) deps.store.mediaBuysWaiting.removeSync(key) })
  let activated = 0
  for (const { media_buy_id: key } of waiting.filter((buy) => ready(deps.store, buy, now))) {
    deps.store.write(() => {
      const buy = deps.store.mediaBuys.get(key)
      if (buy === undefined || !activate(deps, buy, now)) return
      buy.updated_at = iso(now)
      saveBuy(deps.store, buy)
      activated++
    })
  }
  return activated
}
