import { LOSS } from '../loss-codes.js'
import { creativeRefusal, declaredRefusals, floorFor, floorRefusal } from '../rules.js'
import { daysWithin, openProgress, type LocalTime } from '../../inventory/local-time.js'
import { datesBetween } from '../../inventory/hours.js'
import { headroom, type PaceClock } from '../../campaigns/budget.js'
import type { AssignmentRecord } from '../../campaigns/records.js'
import type { CreativeRecord } from '../../creatives/records.js'
import type { ScreenRecord } from '../../inventory/records.js'
import type { Tier } from '../../player/records.js'
import type { Daypart } from '../../generated/types.js'
import type { Candidate, Gathered, GatheredBid, GatheredPlacement } from './gather.js'

export type { Candidate } from './gather.js'

/** The bid increment of the second-price open auction, USD CPM. */
export const INCREMENT = 0.01

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
  /** USD CPM the placement's play is charged to its campaign: its fixed price, or the auction's clearing price. */
  cpm?: number
  winner?: Candidate & { clearing: number }
  creative?: CreativeRecord
  losses: Loss[]
}

const round6 = (n: number) => Math.round(n * 1e6) / 1e6

/** The loss code that keeps a stored bid out of the auction now, or undefined when it may compete. */
function filter (c: GatheredBid, screen: ScreenRecord, now: number): number | undefined {
  const { bid } = c
  if (bid.expires_at <= now || !screen.auction_enabled) return LOSS.expired
  // A bid naming a FEIN segment plays only while the screen's live audience is in it, as a placement targeted on one.
  if (c.inAudience === false) return LOSS.audienceNotInSegment
  if (!c.seatApproved) return LOSS.seatBlocked
  const creative = c.creative
  if (creative === undefined) return LOSS.creativeDisapproved
  const refused = creativeRefusal(creative, screen) ?? declaredRefusals(bid, screen)[0]
  if (refused !== undefined) return refused.loss
  if (bid.dealid !== undefined && c.dealRuns !== true) return LOSS.invalidDeal
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
  /** A placement's creative for this spot: its rotation's pick, at the version that plays. */
  creative?: CreativeRecord
  candidate?: Candidate
  created: number
}

/** One contender of a priced tier (Preferred, the open auction): a stored bid, or a preferred or auction placement. */
interface Entrant {
  price: number
  seat: string
  at: number
  candidate?: Candidate
  line?: Line
}

/** Higher price first; at equal prices the earlier. */
const byEntrant = (a: Entrant, b: Entrant) => b.price - a.price || a.at - b.at

const fromBid = (c: Candidate, price = c.bid.price): Entrant => ({ price, seat: c.bid.seat_id.toLowerCase(), at: c.bid.received_at, candidate: c })

/**
 * Even pacing's calendar for a dayparted placement on this screen: the flight's days left on which its windows open
 * (today included), and the share of today's window minutes behind.
 */
function daypartPace (a: AssignmentRecord, screen: ScreenRecord, local: LocalTime, end: string): PaceClock {
  const progress = openProgress(screen.operating_hours, local, a.dayparts)
  const days = daysWithin(screen.operating_hours, datesBetween(local.date, end < local.date ? local.date : end), a.dayparts!)
  return { daysLeft: Math.max(1, days), released: progress.total > 0 ? progress.elapsed / progress.total : 0 }
}

/**
 * Whether a priced placement's campaign pays for one more play now: it must be running (not paused, completed by its
 * goal or budget, or ended), and a preferred or auction line must have budget headroom for a play at its price (the
 * campaign's pacing, as on the exchange path). Guaranteed lines play their booked spots; their pace is the spots.
 */
function campaignPays (p: GatheredPlacement, screen: ScreenRecord, local: LocalTime, now: number): boolean {
  const a = p.assignment
  if (a.cpm === undefined || a.campaign_id === undefined) return true
  const c = p.campaign
  if (c === undefined || c.status !== 'active') return false
  if ((a.line ?? 'guaranteed') === 'guaranteed') return true
  return headroom(c, p.ledger!, now, a.dayparts !== undefined ? daypartPace(a, screen, local, c.end_date) : undefined) >= p.costMicros!
}

/**
 * The waterfall for a screen's next spot (docs/architecture.md, "The waterfall"): guaranteed lines (placements from
 * assignments, confirmed reservations and guaranteed media buys, and bids on Guaranteed deals) that are behind their
 * even daily pace, then Preferred (deal bids and preferred placements at their fixed prices, the best first), then PMP
 * deals (first price, OpenRTB at 1), then the open auction (bids and auction placements, second price plus 0.01, at 2,
 * one entrant per seat setting prices), then guaranteed lines ahead of pace with spots left today, then the house
 * creative. Every stored bid on the screen is settled by the decision: the winner, or a loss code. Pure: it reads
 * only what gather() read (src/bidding/auction/gather.ts); settle.ts writes the outcome.
 */
export function decide (g: Gathered): Decision {
  const { screen, local, now } = g
  if (!g.open) return { tier: 'closed', local, losses: [] }
  const losses: Loss[] = []
  const buckets: Record<'guaranteed' | 'preferred' | 'pmp' | 'open_auction', GatheredBid[]> = { guaranteed: [], preferred: [], pmp: [], open_auction: [] }
  for (const c of g.bids) {
    const code = filter(c, screen, now)
    if (code !== undefined) losses.push({ candidate: c, code })
    else buckets[tierOf(c) as keyof typeof buckets].push(c)
  }

  // Only a screen with lines to pace needs the day's progress; a line with dayparts paces over their hours.
  let progress: { elapsed: number, total: number } | undefined
  const pace = (perDay: number, dayparts?: Daypart[]) => {
    const p = dayparts !== undefined ? openProgress(screen.operating_hours, local, dayparts) : (progress ??= openProgress(screen.operating_hours, local))
    return Math.ceil((perDay * p.elapsed) / Math.max(1, p.total))
  }
  const lines: Line[] = []
  const preferredLines: Entrant[] = []
  const auctionLines: Entrant[] = []
  for (const p of g.placements) {
    const a = p.assignment
    if (p.creative === undefined || !campaignPays(p, screen, local, now)) continue
    const l: Line = { line: p.line, played: p.played, perDay: a.spots_per_day, behind: pace(a.spots_per_day, a.dayparts) - p.played, assignment: a, creative: p.creative, created: Date.parse(a.created_at) }
    const entrant: Entrant = { price: a.cpm ?? 0, seat: a.seat_id.toLowerCase(), at: l.created, line: l }
    if (a.line === 'preferred') preferredLines.push(entrant)
    else if (a.line !== 'auction') lines.push(l)
    // An auction placement below the floor in force cannot win here, as a bid below it could not.
    else if (entrant.price >= screen.floor_price_cpm) auctionLines.push(entrant)
  }
  // A Guaranteed deal plays its booked spots per screen and day through its buyer's bids; each line keeps its best bid.
  for (const c of buckets.guaranteed.sort(byPrice)) {
    const line = `deal:${c.deal!.deal_id}`
    if (lines.some((l) => l.line === line)) { losses.push({ candidate: c, code: LOSS.outbid, minToWin: round6(c.bid.price + INCREMENT) }); continue }
    const perDay = c.deal!.booked_per_day ?? 0
    const played = c.dealPlayed ?? 0
    // The deal already played its booked spots here today: the opportunity is gone for this bid.
    if (played >= perDay) { losses.push({ candidate: c, code: LOSS.expired }); continue }
    lines.push({ line, played, perDay, behind: pace(perDay) - played, candidate: c, created: c.bid.received_at })
  }
  lines.sort((a, b) => b.behind / b.perDay - a.behind / a.perDay || a.created - b.created)

  const lineLosers = (except: Line | undefined) => {
    for (const l of lines) if (l.candidate !== undefined && l !== except) losses.push({ candidate: l.candidate, code: LOSS.lostToDeal })
  }
  const lowerTiers = (tiers: ReadonlyArray<'preferred' | 'pmp' | 'open_auction'>) => {
    for (const tier of tiers) for (const c of buckets[tier]) losses.push({ candidate: c, code: LOSS.lostToDeal })
  }
  /** A placement that won its tier: it plays its creative and is charged `cpm` (none for an unpriced placement). */
  const placed = (tier: Tier, line: Line, cpm: number | undefined): Decision => {
    const a = line.assignment!
    const d: Decision = { tier, local, line: line.line, assignment: a, creative: line.creative!, losses }
    if (cpm !== undefined) d.cpm = cpm
    return d
  }
  const fromLine = (line: Line): Decision => {
    lineLosers(line)
    lowerTiers(['preferred', 'pmp', 'open_auction'])
    const c = line.candidate
    if (c !== undefined) return { tier: 'guaranteed', local, line: line.line, winner: { ...c, clearing: c.deal!.fixed_cpm ?? c.bid.price }, creative: c.creative!, losses }
    return placed('guaranteed', line, line.assignment!.cpm)
  }
  const due = lines.find((l) => l.behind > 0)
  if (due !== undefined) return fromLine(due)

  /** Every stored bid of a tier but the winner lost to it: 102, with the winning price plus the increment. */
  const sameTierLosers = (winner: Entrant, rest: Entrant[]) => {
    for (const e of rest) if (e !== winner && e.candidate !== undefined) losses.push({ candidate: e.candidate, code: LOSS.outbid, minToWin: round6(winner.price + INCREMENT) })
  }
  const preferred = [...buckets.preferred.map((c) => fromBid(c, c.deal!.fixed_cpm ?? c.bid.price)), ...preferredLines].sort(byEntrant)
  if (preferred.length > 0) {
    const w = preferred[0]!
    lineLosers(undefined)
    sameTierLosers(w, preferred)
    lowerTiers(['pmp', 'open_auction'])
    if (w.line !== undefined) return placed('preferred', w.line, w.price)
    return { tier: 'preferred', local, winner: { ...w.candidate!, clearing: w.price }, creative: w.candidate!.creative!, losses }
  }
  const pmp = buckets.pmp.map((c) => fromBid(c)).sort(byEntrant)
  if (pmp.length > 0) {
    const w = pmp[0]!
    lineLosers(undefined)
    sameTierLosers(w, pmp)
    lowerTiers(['open_auction'])
    return { tier: 'pmp', local, winner: { ...w.candidate!, clearing: w.price }, creative: w.candidate!.creative!, losses }
  }
  const open = [...buckets.open_auction.map((c) => fromBid(c)), ...auctionLines].sort(byEntrant)
  if (open.length > 0) {
    const w = open[0]!
    // One entrant per seat sets prices: a seat's lower bids cannot raise what its best one pays.
    const runnerUp = open.find((e) => e.seat !== w.seat)
    const floor = Math.max(w.candidate?.bid.floor ?? 0, screen.floor_price_cpm)
    const clearing = round6(Math.min(w.price, Math.max(floor, runnerUp?.price ?? floor) + (runnerUp !== undefined || w.price > floor ? INCREMENT : 0)))
    lineLosers(undefined)
    sameTierLosers(w, open)
    if (w.line !== undefined) return placed('open_auction', w.line, clearing)
    return { tier: 'open_auction', local, winner: { ...w.candidate!, clearing }, creative: w.candidate!.creative!, losses }
  }
  // Nothing else wants the spot: a guaranteed line ahead of its pace plays it rather than the house.
  if (lines.length > 0) return fromLine(lines[0]!)
  // The operator's house creative (PUT /admin/v1/platform).
  const decision: Decision = { tier: 'house', local, losses }
  if (g.house !== undefined) decision.creative = g.house
  return decision
}
