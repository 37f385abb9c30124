import { dealRuns } from '../../campaigns/deal-rules.js'
import { ledgerOf } from '../../campaigns/budget.js'
import { rotationOf, rotationSlot } from '../../campaigns/rotation.js'
import type { AssignmentRecord, CampaignLedger, CampaignRecord, DealRecord } from '../../campaigns/records.js'
import type { CreativeRecord } from '../../creatives/records.js'
import { playingVersion } from '../../creatives/versions.js'
import type { LiveAudience } from '../../generated/types.js'
import { indexEntryOf } from '../../inventory/adslot-index.js'
import { impressionMultiplier, liveSignals, type LiveSignals } from '../../inventory/fein.js'
import { audienceMatches } from '../../inventory/live-audience.js'
import { isOpen, localTime, type LocalTime } from '../../inventory/local-time.js'
import type { ScreenRecord } from '../../inventory/records.js'
import { playCostMicros } from '../../money.js'
import { setting } from '../../store/settings.js'
import type { Store } from '../../store/store.js'
import type { BookKey, StoredBid } from '../records.js'
import { creativeRefusal } from '../rules.js'

/** A stored bid as the waterfall sees it. */
export interface Candidate {
  key: BookKey
  bid: StoredBid
  creative?: CreativeRecord
  deal?: DealRecord
}

/** A stored bid with what the decision needs to know of it beyond its own records. */
export interface GatheredBid extends Candidate {
  /** Whether its seat is approved. */
  seatApproved: boolean
  /** Whether its deal runs on this screen today (a bid with a dealid whose deal is known). */
  dealRuns?: boolean
  /** Spots its Guaranteed deal has played on this screen today. */
  dealPlayed?: number
  /** Whether the screen's live audience is in the FEIN segment it names (a bid that names one). */
  inAudience?: boolean
}

/** A placement that may play on the screen now: live, in its dates and dayparts, its audience present. */
export interface GatheredPlacement {
  assignment: AssignmentRecord
  /** Its pacing line (`asg:<id>`) and the spots that line played on the screen today. */
  line: string
  played: number
  /** Its creative for the next spot: its rotation's pick among those that may play here, at their playing versions. */
  creative: CreativeRecord | undefined
  /** A priced placement's campaign, and for a preferred or auction line its money and one play's cost (micro-USD). */
  campaign?: CampaignRecord
  ledger?: CampaignLedger
  costMicros?: number
}

/** Everything a screen's next spot is decided on, read from the store at one moment (gather); decide() reads nothing else. */
export interface Gathered {
  screen: ScreenRecord
  now: number
  local: LocalTime
  /** Whether the screen is open now (its operating hours); a closed screen's spot reads nothing more. */
  open: boolean
  bids: GatheredBid[]
  placements: GatheredPlacement[]
  /** The operator's house creative, when one is set and may play on the screen. */
  house: CreativeRecord | undefined
}

/** The date after a YYYY-MM-DD date; the last one asked is kept, as every decision of a day asks the same. */
let lastDay: [string, string] = ['', '']
function dayAfter (date: string): string {
  if (lastDay[0] !== date) lastDay = [date, new Date(Date.parse(`${date}T00:00:00Z`) + 86_400_000).toISOString().slice(0, 10)]
  return lastDay[1]
}

/** A placement's creative for its spot number `played` of the day on a screen (rotationSlot), or undefined when none may play. */
function placementCreative (store: Store, a: AssignmentRecord, screen: ScreenRecord, played: number): CreativeRecord | undefined {
  const playable: CreativeRecord[] = []
  const weights: number[] = []
  for (const { creative_id: id, weight } of rotationOf(a)) {
    const named = store.creatives.get(id)
    const creative = named !== undefined ? playingVersion(store, named) : undefined
    if (creative === undefined || creativeRefusal(creative, screen) !== undefined) continue
    playable.push(creative)
    weights.push(weight)
  }
  return playable.length <= 1 ? playable[0] : playable[rotationSlot(weights, played)]
}

/**
 * Reads what a screen's next spot is decided on: its stored bids with their creatives, deals and seats, the
 * placements that may play now with their plays today, creatives and campaigns' money, and the house creative.
 * Each lookup is made once, and only when a record present asks for it (the
 * live signals when a bid or placement names an audience, the index entry when a bid names a deal).
 */
export function gather (store: Store, screen: ScreenRecord, now: number): Gathered {
  const local = localTime(screen.timezone, now)
  if (!isOpen(screen.operating_hours, local)) return { screen, now, local, open: false, bids: [], placements: [], house: undefined }
  const screenId = screen.screen_id
  let signals: LiveSignals | undefined
  const inAudience = (a: LiveAudience): boolean => screen.capabilities.fein && audienceMatches(a, (signals ??= liveSignals(store.fein.get(screenId), now)))
  let entry: ReturnType<typeof indexEntryOf> | null = null
  const bids: GatheredBid[] = []
  for (const { key, value } of store.bids.getRange({ start: [screenId], end: [screenId + '\u0000'] } as never)) {
    const seat = store.seats.get(value.seat_id.toLowerCase())
    const deal = value.dealid !== undefined ? store.deals.get(value.dealid) : undefined
    if (deal !== undefined && entry === null) entry = indexEntryOf(store, screenId)
    // Every field set, in one order: one shape for every bid the decision walks.
    bids.push({
      key,
      bid: value,
      creative: store.creatives.get(value.creative_id),
      deal,
      seatApproved: seat !== undefined && seat.status === 'approved',
      dealRuns: deal !== undefined ? dealRuns(deal, local.date, entry ?? undefined) : undefined,
      dealPlayed: deal?.type === 'Guaranteed' ? store.plays.get([screenId, local.date, `deal:${deal.deal_id}`]) ?? 0 : undefined,
      inAudience: value.audience !== undefined ? inAudience(value.audience) : undefined
    })
  }
  let multiplier: number | undefined
  const placements: GatheredPlacement[] = []
  // Up to tomorrow's date: a media buy's placement, bounded by instants, may start on a UTC date the screen's local
  // day has not reached.
  for (const { value: id } of store.placements.getRange({ start: [screenId], end: [screenId, dayAfter(local.date) + '\u0000'] } as never)) {
    const a = store.assignments.get(id)
    if (a === undefined || a.status !== 'active' || Date.parse(a.effective_at) > now) continue
    if (a.ends_at !== undefined ? now >= Date.parse(a.ends_at) : a.start_date > local.date || a.end_date < local.date) continue
    if (a.dayparts !== undefined && !isOpen(screen.operating_hours, local, a.dayparts)) continue
    // A placement targeted on a FEIN signal plays only while the screen's live audience is in it.
    if (a.audience !== undefined && !inAudience(a.audience)) continue
    const line = `asg:${id}`
    const played = store.plays.get([screenId, local.date, line]) ?? 0
    if (played >= a.spots_per_day) continue
    const p: GatheredPlacement = { assignment: a, line, played, creative: placementCreative(store, a, screen, played), campaign: undefined, ledger: undefined, costMicros: undefined }
    if (p.creative !== undefined && a.cpm !== undefined && a.campaign_id !== undefined) {
      const c = store.campaigns.get(a.campaign_id)
      if (c !== undefined) {
        p.campaign = c
        if (c.status === 'active' && (a.line ?? 'guaranteed') !== 'guaranteed') {
          const cost = playCostMicros(a.cpm, (multiplier ??= impressionMultiplier(store.fein.get(screenId), screen.capabilities.fein, now)))
          p.costMicros = cost
          p.ledger = ledgerOf(store, c.campaign_id, now, cost)
        }
      }
    }
    placements.push(p)
  }
  const houseId = setting(store, 'house_creative_id')
  const house = houseId !== undefined ? store.creatives.get(houseId) : undefined
  return { screen, now, local, open: true, bids, placements, house: house !== undefined && creativeRefusal(house, screen) === undefined ? house : undefined }
}
