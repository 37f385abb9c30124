import { LOSS } from '../loss-codes.js'
import { creativeRefusal, dealRuns, declaredRefusals, floorFor, floorRefusal, indexEntryOf } from '../rules.js'
import { isOpen, localTime, openProgress, type LocalTime } from '../../inventory/local-time.js'
import type { StoredBid } from '../records.js'
import type { AssignmentRecord, DealRecord } from '../../campaigns/records.js'
import type { CreativeRecord } from '../../creatives/records.js'
import type { ScreenRecord } from '../../inventory/records.js'
import type { Tier } from '../../player/records.js'
import type { Store } from '../../store/store.js'

/** The bid increment of the second-price open auction, USD CPM. */
export const INCREMENT = 0.01

/** A stored bid as the waterfall sees it. */
export interface Candidate {
  key: [string, string, string]
  bid: StoredBid
  creative?: CreativeRecord
  deal?: DealRecord
}

export interface Loss {
  candidate: Candidate
  code: number
  /** USD CPM that would have won, disclosed for 102. */
  minToWin?: number
}

/** What plays next on a screen and what every stored bid on it came to. */
export interface Decision {
  tier: Tier
  local: LocalTime
  /** Pacing line of the placement or guaranteed deal that played: its plays today count against its daily spots. */
  line?: string
  assignment?: AssignmentRecord
  winner?: Candidate & { clearing: number }
  creative?: CreativeRecord
  losses: Loss[]
}

const round6 = (n: number) => Math.round(n * 1e6) / 1e6

/** The loss code that keeps a stored bid out of the auction now, or undefined when it may compete. */
function filter (c: Candidate, screen: ScreenRecord, store: Store, now: number, local: LocalTime): number | undefined {
  const { bid } = c
  if (bid.expires_at <= now || !screen.auction_enabled) return LOSS.expired
  const seat = store.seats.get(bid.seat_id.toLowerCase())
  if (seat === undefined || seat.status !== 'approved') return LOSS.seatBlocked
  const creative = c.creative
  if (creative === undefined) return LOSS.creativeDisapproved
  const refused = creativeRefusal(creative, screen) ?? declaredRefusals(bid, screen)[0]
  if (refused !== undefined) return refused.loss
  if (bid.dealid !== undefined && (c.deal === undefined || !dealRuns(c.deal, local.date, indexEntryOf(store, screen.screen_id)))) return LOSS.invalidDeal
  // Floors are checked again at auction time: a screen whose floor was raised since the imp was issued is sold at
  // the floor now in force.
  return floorRefusal(bid.price, floorFor(c.deal, bid.floor, screen), bid.dealid !== undefined)?.loss
}

function tierOf (c: Candidate): Tier {
  if (c.deal === undefined) return 'open_auction'
  return c.deal.type === 'Guaranteed' ? 'guaranteed' : c.deal.type === 'Preferred' ? 'preferred' : 'pmp'
}

/** Higher price first; at equal prices the earlier bid. */
const byPrice = (a: Candidate, b: Candidate) => b.bid.price - a.bid.price || a.bid.received_at - b.bid.received_at

interface Line {
  line: string
  played: number
  perDay: number
  /** How far behind its even pace the line is: plays due by now minus plays made. */
  behind: number
  assignment?: AssignmentRecord
  candidate?: Candidate
  created: number
}

/**
 * The waterfall for a screen's next spot (docs/architecture.md, "The waterfall"): guaranteed lines (placements from
 * assignments and confirmed reservations, and bids on Guaranteed deals) that are behind their even daily pace, then
 * Preferred deals (fixed price, the best price first), then PMP deals (first price, OpenRTB at 1), then the open
 * auction (second price plus 0.01, at 2, one bid per seat), then guaranteed lines ahead of pace with spots left today,
 * then the house creative. Every stored bid on the screen is settled by the decision: the winner, or a loss code.
 * Reads only; settle.ts writes the outcome.
 */
export function decide (store: Store, screen: ScreenRecord, now: number, houseCreativeId: string | undefined): Decision {
  const local = localTime(screen.timezone, now)
  if (!isOpen(screen.operating_hours, local)) return { tier: 'closed', local, losses: [] }
  const losses: Loss[] = []
  const buckets: Record<'guaranteed' | 'preferred' | 'pmp' | 'open_auction', Candidate[]> = { guaranteed: [], preferred: [], pmp: [], open_auction: [] }
  for (const { key, value } of store.bids.getRange({ start: [screen.screen_id], end: [screen.screen_id + '\u0000'] } as never)) {
    const c: Candidate = { key: key as unknown as [string, string, string], bid: value }
    const creative = store.creatives.get(value.creative_id)
    if (creative !== undefined) c.creative = creative
    if (value.dealid !== undefined) {
      const deal = store.deals.get(value.dealid)
      if (deal !== undefined) c.deal = deal
    }
    const code = filter(c, screen, store, now, local)
    if (code !== undefined) losses.push({ candidate: c, code })
    else buckets[tierOf(c) as keyof typeof buckets].push(c)
  }

  const progress = openProgress(screen.operating_hours, local)
  const pace = (perDay: number) => Math.ceil((perDay * progress.elapsed) / Math.max(1, progress.total))
  const lines: Line[] = []
  for (const { value: id } of store.placements.getRange({ start: [screen.screen_id], end: [screen.screen_id, local.date + '\u0000'] } as never)) {
    const a = store.assignments.get(id)
    if (a === undefined || a.status !== 'active' || a.end_date < local.date || Date.parse(a.effective_at) > now) continue
    const creative = store.creatives.get(a.creative_id)
    if (creative === undefined || creativeRefusal(creative, screen) !== undefined) continue
    const line = `asg:${id}`
    const played = store.plays.get([screen.screen_id, local.date, line]) ?? 0
    if (played >= a.spots_per_day) continue
    lines.push({ line, played, perDay: a.spots_per_day, behind: pace(a.spots_per_day) - played, assignment: a, created: Date.parse(a.created_at) })
  }
  // A Guaranteed deal plays its booked spots per screen and day through its buyer's bids; each line keeps its best bid.
  for (const c of buckets.guaranteed.sort(byPrice)) {
    const line = `deal:${c.deal!.deal_id}`
    if (lines.some((l) => l.line === line)) { losses.push({ candidate: c, code: LOSS.outbid, minToWin: round6(c.bid.price + INCREMENT) }); continue }
    const perDay = c.deal!.booked_per_day ?? 0
    const played = store.plays.get([screen.screen_id, local.date, line]) ?? 0
    // The deal already played its booked spots here today: the opportunity is gone for this bid.
    if (played >= perDay) { losses.push({ candidate: c, code: LOSS.expired }); continue }
    lines.push({ line, played, perDay, behind: pace(perDay) - played, candidate: c, created: c.bid.received_at })
  }
  lines.sort((a, b) => b.behind / b.perDay - a.behind / a.perDay || a.created - b.created)

  const lineLosers = (except: Line | undefined) => {
    for (const l of lines) if (l.candidate !== undefined && l !== except) losses.push({ candidate: l.candidate, code: LOSS.lostToDeal })
  }
  const fromLine = (line: Line): Decision => {
    lineLosers(line)
    for (const tier of ['preferred', 'pmp', 'open_auction'] as const) for (const c of buckets[tier]) losses.push({ candidate: c, code: LOSS.lostToDeal })
    const c = line.candidate
    if (c !== undefined) return { tier: 'guaranteed', local, line: line.line, winner: { ...c, clearing: c.deal!.fixed_cpm ?? c.bid.price }, creative: c.creative!, losses }
    return { tier: 'guaranteed', local, line: line.line, assignment: line.assignment!, creative: store.creatives.get(line.assignment!.creative_id)!, losses }
  }
  const due = lines.find((l) => l.behind > 0)
  if (due !== undefined) return fromLine(due)

  const sameTierLosers = (winner: Candidate, rest: Candidate[]) => {
    for (const c of rest) if (c !== winner) losses.push({ candidate: c, code: LOSS.outbid, minToWin: round6(winner.bid.price + INCREMENT) })
  }
  const fixed = (c: Candidate) => c.deal!.fixed_cpm ?? c.bid.price
  const preferred = buckets.preferred.sort((a, b) => fixed(b) - fixed(a) || a.bid.received_at - b.bid.received_at)
  if (preferred.length > 0) {
    const w = preferred[0]!
    lineLosers(undefined)
    sameTierLosers(w, preferred)
    for (const tier of ['pmp', 'open_auction'] as const) for (const c of buckets[tier]) losses.push({ candidate: c, code: LOSS.lostToDeal })
    return { tier: 'preferred', local, winner: { ...w, clearing: fixed(w) }, creative: w.creative!, losses }
  }
  const pmp = buckets.pmp.sort(byPrice)
  if (pmp.length > 0) {
    const w = pmp[0]!
    lineLosers(undefined)
    sameTierLosers(w, pmp)
    for (const c of buckets.open_auction) losses.push({ candidate: c, code: LOSS.lostToDeal })
    return { tier: 'pmp', local, winner: { ...w, clearing: w.bid.price }, creative: w.creative!, losses }
  }
  const open = buckets.open_auction.sort(byPrice)
  if (open.length > 0) {
    const w = open[0]!
    // One bid per seat sets prices: a seat's lower bids cannot raise what its best one pays.
    const runnerUp = open.find((c) => c.bid.seat_id.toLowerCase() !== w.bid.seat_id.toLowerCase())
    const floor = Math.max(w.bid.floor, screen.floor_price_cpm)
    const clearing = round6(Math.min(w.bid.price, Math.max(floor, runnerUp?.bid.price ?? floor) + (runnerUp !== undefined || w.bid.price > floor ? INCREMENT : 0)))
    lineLosers(undefined)
    sameTierLosers(w, open)
    return { tier: 'open_auction', local, winner: { ...w, clearing }, creative: w.creative!, losses }
  }
  // Nothing else wants the spot: a guaranteed line ahead of its pace plays it rather than the house.
  if (lines.length > 0) return fromLine(lines[0]!)
  const house = houseCreativeId !== undefined ? store.creatives.get(houseCreativeId) : undefined
  const decision: Decision = { tier: 'house', local, losses }
  if (house !== undefined && creativeRefusal(house, screen) === undefined) decision.creative = house
  return decision
}
