// Screen time as a ledger of claims: what a booking takes (its items), whether it fits, and the rows it moves. One
// rule, used where a node books alone and where a partition's log applies a booking on every node that holds it
// (capacity-machine.ts), so both decide the same.
import type { Daypart } from '../generated/types.js'
import { datesBetween, openMinutesOn } from '../inventory/hours.js'
import { openMinutesByHour } from '../inventory/local-time.js'
import type { ScreenRecord } from '../inventory/records.js'
import type { Store } from '../store/store.js'
import { IDEMPOTENCY_TTL_MS } from '../http/idempotency.js'
import { partitionOf } from '../cluster/screen-partitions.js'
import { rewriteInBatches, runOnce } from '../store/rewrite.js'
import type { BookingItem, ClaimOutcome, ClaimRecord, Shortfall } from './records.js'

/** Spots a screen can play on a date: open time in its local hours divided by its slot duration. */
export function capacityOn (screen: ScreenRecord, date: string): number {
  return Math.floor((openMinutesOn(screen.operating_hours, date) * 60) / screen.slot_duration_seconds)
}

export function bookedOn (store: Store, screenId: string, date: string): number {
  return store.booked.get([screenId, date]) ?? 0
}

/** Spots still free on a screen's date: its capacity less what placements, holds and deals booked. */
export function freeOn (store: Store, screen: ScreenRecord, date: string): number {
  return capacityOn(screen, date) - bookedOn(store, screen.screen_id, date)
}

/** Spots booked in an hour of a screen's date by guaranteed lines with dayparts. */
export function bookedInHour (store: Store, screenId: string, date: string, hour: number): number {
  return store.bookedHours.get([screenId, date, hour]) ?? 0
}

/**
 * How a daypart line's spots of a date spread over the hours it plays in: in proportion to the spots each hour can
 * play (its open minutes over the slot length), the remainders to the largest fractions, so that they sum to `spots`.
 * Answers [hour, spots, capacity] for each hour; none on a date the dayparts leave no open hour.
 */
export function hourShares (screen: ScreenRecord, date: string, dayparts: Daypart[], spots: number): Array<[number, number, number]> {
  const capacities = openMinutesByHour(screen.operating_hours, date, dayparts).map(([h, m]): [number, number] => [h, Math.floor((m * 60) / screen.slot_duration_seconds)])
  const total = capacities.reduce((n, [, c]) => n + c, 0)
  if (total === 0) return []
  const exact = capacities.map(([h, c]) => ({ h, c, share: (spots * c) / total }))
  const shares = exact.map((e) => Math.floor(e.share))
  let left = spots - shares.reduce((a, b) => a + b, 0)
  for (const i of exact.map((_, i) => i).sort((a, b) => (exact[b]!.share % 1) - (exact[a]!.share % 1) || a - b)) {
    if (left === 0) break
    shares[i]!++
    left--
  }
  return exact.map((e, i) => [e.h, shares[i]!, e.c])
}

/**
 * What booking `spots` a day on screens over a range takes: each screen and day with the capacity its record gives
 * it, and for a daypart line the day's spots hour by hour within the dayparts (days without daypart hours take none).
 * The capacities travel with the booking: whoever decides it (a partition's log, on every node) reads no screen record.
 */
export function planBooking (screens: ScreenRecord[], start: string, end: string, spots: number, dayparts?: Daypart[]): BookingItem[] {
  const days = datesBetween(start, end)
  const items: BookingItem[] = []
  screens.forEach((screen, at) => {
    for (const date of days) {
      const hours = dayparts !== undefined ? hourShares(screen, date, dayparts, spots) : undefined
      if (hours?.length === 0) continue
      items.push({ screen: screen.screen_id, date, spots, capacity: capacityOn(screen, date), version: Date.parse(screen.updated_at), at, ...(hours !== undefined ? { hours } : {}) })
    }
  })
  return items
}

/** The first item that does not fit beside what is booked, or undefined when all of it does. */
export function shortfall (store: Store, items: BookingItem[]): Shortfall | undefined {
  for (const item of items) {
    const free = item.capacity - bookedOn(store, item.screen, item.date)
    if (free < item.spots) return { at: item.at, screen: item.screen, date: item.date, free: Math.max(0, free), asked: item.spots }
    for (const [hour, share, capacity] of item.hours ?? []) {
      const left = capacity - bookedInHour(store, item.screen, item.date, hour)
      if (left < share) return { at: item.at, screen: item.screen, date: item.date, free: Math.max(0, left), asked: share, hour }
    }
  }
  return undefined
}

/**
 * Adds a booking's items to the booked rows (sign 1) or takes them out (-1), in the partition that books them (a
 * booking made before claims, given back, names none). Call inside Store.write.
 */
export function moveBooked (store: Store, items: BookingItem[], sign: 1 | -1, partition?: number): void {
  for (const item of items) {
    const day = bookedOn(store, item.screen, item.date) + sign * item.spots
    if (day > 0) store.booked.putSync([item.screen, item.date], day)
    else store.booked.removeSync([item.screen, item.date])
    if (partition !== undefined) {
      if (day > 0) store.bookedDays.putSync([partition, item.date, item.screen], 1)
      else store.bookedDays.removeSync([partition, item.date, item.screen])
    }
    for (const [hour, share] of item.hours ?? []) {
      if (share === 0) continue
      const inHour = bookedInHour(store, item.screen, item.date, hour) + sign * share
      if (inHour > 0) store.bookedHours.putSync([item.screen, item.date, hour], inHour)
      else store.bookedHours.removeSync([item.screen, item.date, hour])
    }
  }
}

/** A booking's items by the partition of their screens. */
export function itemsByPartition (items: BookingItem[], partitions: number): Map<number, BookingItem[]> {
  const parts = new Map<number, BookingItem[]>()
  for (const item of items) {
    const p = partitionOf(item.screen, partitions)
    const list = parts.get(p)
    if (list === undefined) parts.set(p, [item])
    else list.push(item)
  }
  return parts
}

// The partition's side: a claim's items there are counted from its take, kept or dropped by its settlement, and
// dropped by its release. A take is checked against everything counted, tentative parts included: it may be refused
// for room another booking only might take, never booked past it.

/**
 * Takes a claim's part tentatively: counted until its settlement keeps or drops it, and kept until its claim's last
 * day (lastDay; its own items' for a claim taken whole) is past everywhere. Refused when the part was settled
 * before (a take landing after its claim was aborted takes nothing), when an item's screen is not the partition's or
 * was read in an older version than one the partition has seen, or when it does not fit.
 */
export function takePart (store: Store, claim: string, partition: number, partitions: number, items: BookingItem[], now: number, state: 'tentative' | 'taken' = 'tentative', lastDay = lastDayOf(items)): ClaimOutcome {
  if (store.capacityParts.get([claim, partition]) !== undefined) return { ok: false, reason: 'settled' }
  for (const item of items) {
    if (partitionOf(item.screen, partitions) !== partition) return { ok: false, reason: 'wrong_partition' }
    if (item.version < (store.capacityScreens.get(item.screen) ?? 0)) return { ok: false, reason: 'stale_screen' }
  }
  const short = shortfall(store, items)
  if (short !== undefined) return { ok: false, reason: 'capacity_unavailable', short }
  for (const item of items) if (item.version > (store.capacityScreens.get(item.screen) ?? 0)) store.capacityScreens.putSync(item.screen, item.version)
  moveBooked(store, items, 1, partition)
  store.capacityParts.putSync([claim, partition], { items, state })
  endsWithItsDays(store, partition, claim, partition, lastDay, now)
  return { ok: true }
}

/** Settles a claim's part as its claim was decided: kept (commit) or given back (abort); remembered either way. */
export function settlePart (store: Store, claim: string, partition: number, outcome: 'commit' | 'abort', now: number): ClaimOutcome {
  const part = store.capacityParts.get([claim, partition])
  if (part !== undefined && part.state !== 'tentative') return { ok: true }
  if (outcome === 'commit' && part !== undefined) store.capacityParts.putSync([claim, partition], { ...part, state: 'taken' })
  else {
    if (part !== undefined) moveBooked(store, part.items, -1, partition)
    dropPart(store, claim, partition, now)
  }
  return { ok: true }
}

/** A part given back, kept as dropped (a take landing later is refused) until it ends (sweepEnded). */
function dropPart (store: Store, claim: string, partition: number, now: number): void {
  store.capacityParts.putSync([claim, partition], { items: [], state: 'dropped' })
  store.capacityEnded.putSync([partition, now, claim, partition], true)
}

/**
 * Gives a part back (its claim was released, expired or booked again). A claim is given only once committed, so a
 * release that lands before the commit's settlement drops a tentative part too, and the settlement finds it settled.
 */
export function releasePart (store: Store, claim: string, partition: number, now: number): ClaimOutcome {
  const part = store.capacityParts.get([claim, partition])
  if (part?.state === 'dropped') return { ok: false, reason: 'claim_gone' }
  // Gone already, with its past days: marked dropped all the same, so that the claim's recovery sees it given back.
  if (part === undefined) {
    dropPart(store, claim, partition, now)
    return { ok: false, reason: 'claim_gone' }
  }
  moveBooked(store, part.items, -1, partition)
  dropPart(store, claim, partition, now)
  return { ok: true }
}

/** A log as the protocol uses it: a partition of the screens (its number) or the claims log. */
export type CapacityLog = number | 'claims'

/**
 * Where a claim's life is decided: the partition named in its id (`<id>@<partition>`, a claim in one partition), else
 * the claims log.
 */
export function claimLog (claim: string): CapacityLog {
  const at = claim.lastIndexOf('@')
  return at === -1 ? 'claims' : Number(claim.slice(at + 1))
}

/** A claim's states it never leaves: what it took is given back, and its row answers only retries. */
const ENDED = new Set(['aborted', 'given', 'expired'])

/** Ended claims and dropped parts removed by one step at most: the upkeep stays small beside the step itself. */
const SWEEP_BATCH = 64

/**
 * How far behind its log's time (UTC) a screen-day is past in every time zone, with room: a screen's date is its
 * local one, at most 14 hours off UTC.
 */
const PAST_DAY_MS = 2 * 86_400_000

/** From when a date is past in every time zone: the start of the day after it, plus PAST_DAY_MS. */
export function pastFrom (date: string): number {
  return Date.parse(`${date}T00:00:00Z`) + 86_400_000 + PAST_DAY_MS
}

/** A booking's last date; undefined for one of no items (its dayparts left no open hour on any of its days). */
export const lastDayOf = (items: BookingItem[]): string | undefined => items.length === 0 ? undefined : items.reduce((last, item) => item.date > last ? item.date : last, items[0]!.date)

/**
 * Removes a partition's booked rows of days past in every time zone (their spots, and their hours), at most
 * SWEEP_BATCH a step, oldest first: nothing books a past day, and they were kept forever. Run at each step of the
 * partition's log, in its time, so every node removes the same rows at the same step; a node alone at each booking.
 */
export function sweepPastDays (store: Store, partition: number, now: number): void {
  const before = new Date(now - PAST_DAY_MS).toISOString().slice(0, 10)
  for (const key of store.bookedDays.getKeys({ start: [partition], end: [partition, before], limit: SWEEP_BATCH } as never)) {
    const [, date, screen] = key
    store.bookedDays.removeSync(key)
    store.booked.removeSync([screen, date])
    for (const hour of store.bookedHours.getKeys({ start: [screen, date], end: [screen, date, Infinity] } as never)) store.bookedHours.removeSync(hour)
  }
}

/**
 * Indexes by partition and date the booked rows an earlier version wrote without (bookedDays), once, so that their
 * past days are removed too. partitions: CLUSTER_PARTITIONS, 1 on a node alone.
 */
export function indexBookedDays (store: Store, partitions: number): void {
  runOnce(store, 'booked_days', () => {
    rewriteInBatches(store, store.booked, ([screen, date]) => store.bookedDays.putSync([partitionOf(screen, partitions), date, screen], 1))
  })
}

/**
 * Gives the claims that stood before their last day was recorded (last_day) that day, read from their parts, and
 * indexes them and their parts to go once it is past (sweepEnded), once. Each node of a cluster does so at its own
 * start, outside the logs: a past day's claim may leave one node's rows some steps before another's, and nothing
 * books or gives back a past day.
 */
export function indexClaimDays (store: Store): void {
  runOnce(store, 'claim_days', () => {
    rewriteInBatches(store, store.capacityClaims, (claim, c) => {
      if ((c.state !== 'held' && c.state !== 'firm') || c.last_day !== undefined) return
      const lastDay = lastDayOf(c.parts.flatMap((p) => store.capacityParts.get([claim, p])?.items ?? []))
      if (lastDay === undefined) return
      store.capacityClaims.putSync(claim, { ...c, last_day: lastDay })
      endsWithItsDays(store, claimLog(claim), claim, 'claim', lastDay, 0)
      for (const p of c.parts) endsWithItsDays(store, p, claim, p, lastDay, 0)
    })
  })
}

/**
 * Removes the claims that ended and the parts that were dropped in a log (a partition, or the claims log) as long ago
 * as an Idempotency-Key is remembered: until then a retry of the booking that made them (the same key) finds them and
 * is answered as the first try was; after it, the retry is a new booking. Claims that live (held, firm) and their
 * parts go as long after their last day is past in every time zone (pastFrom): nothing books or gives back a past
 * day, and a firm claim was otherwise kept for good, in every checkpoint of its log. Run at each step of the log, in
 * its time, so every node removes the same rows at the same step.
 */
export function sweepEnded (store: Store, log: CapacityLog, now: number): void {
  let n = 0
  for (const key of store.capacityEnded.getKeys({ start: [log], end: [log, now - IDEMPOTENCY_TTL_MS, '\uffff'] })) {
    if (n++ === SWEEP_BATCH) break
    const [, , claim, part] = key
    store.capacityEnded.removeSync(key)
    if (part === 'claim') {
      const c = store.capacityClaims.get(claim)
      // An entry of an earlier claim of the same id (its Idempotency-Key used again a day later) leaves a live one be.
      if (c === undefined || (!ENDED.has(c.state) && (c.last_day === undefined || pastFrom(c.last_day) > now))) continue
      if (c.lapses_at !== undefined) store.capacityLapses.removeSync([c.lapses_at, claim])
      store.capacityClaims.removeSync(claim)
      continue
    }
    const p = store.capacityParts.get([claim, part])
    if (p !== undefined && (p.state === 'dropped' || p.items.every((item) => pastFrom(item.date) <= now))) store.capacityParts.removeSync([claim, part])
  }
}

/**
 * A claim or part that stands until its days are past: removed by sweepEnded as long after as an ended one, and never
 * sooner after now (one booked for days already past stands a day: its request reads it, and a retry finds it).
 */
function endsWithItsDays (store: Store, log: CapacityLog, claim: string, part: number | 'claim', lastDay: string | undefined, now: number): void {
  if (lastDay !== undefined) store.capacityEnded.putSync([log, Math.max(pastFrom(lastDay), now), claim, part], true)
}

// The claim's side: its life, decided in one place for all its parts (a cluster's claims log), so that a hold
// confirmed in one partition cannot lapse in another: pending until committed or aborted, then held (lapsing at
// lapses_at unless kept) or firm, until given back.

/** A step of a claim's life; now is the decider's time (the claims log's log time on a cluster). */
export type ClaimStep =
  | { op: 'intent', claim: string, parts: number[], hold_ms?: number, timeout_ms: number, last_day?: string }
  | { op: 'commit' | 'abort' | 'keep' | 'expire', claim: string }
  | { op: 'give', claim: string, from: 'held' | 'firm' }

/**
 * Moves a claim one step, or refuses: a commit comes only from the node (in the life) that declared the intent; an
 * abort from it, or from anyone once the intent is past its time; a keep only of a hold before it lapses, or of one
 * kept already (a confirmation retried: the placement is named by the claim, so repeats make one), an expire only
 * after; a give only from the state the giver read.
 * What is refused changes nothing.
 */
export function stepClaim (store: Store, step: ClaimStep, now: number, by: { node: string, incarnation: string }): ClaimOutcome {
  const c = store.capacityClaims.get(step.claim)
  const put = (next: ClaimRecord): ClaimOutcome => {
    if (c?.lapses_at !== undefined) store.capacityLapses.removeSync([c.lapses_at, step.claim])
    if (next.lapses_at !== undefined) store.capacityLapses.putSync([next.lapses_at, step.claim], true)
    store.capacityClaims.putSync(step.claim, next)
    if (ENDED.has(next.state)) store.capacityEnded.putSync([claimLog(step.claim), now, step.claim, 'claim'], true)
    else if (c?.state === 'pending') endsWithItsDays(store, claimLog(step.claim), step.claim, 'claim', next.last_day, now)
    return { ok: true }
  }
  if (step.op === 'intent') return c !== undefined ? { ok: false, reason: 'duplicate' } : put({ state: 'pending', parts: step.parts, node: by.node, incarnation: by.incarnation, intent_at: now, timeout_ms: step.timeout_ms, ...(step.hold_ms !== undefined ? { hold_ms: step.hold_ms } : {}), ...(step.last_day !== undefined ? { last_day: step.last_day } : {}) })
  if (c === undefined) return { ok: false, reason: 'claim_gone' }
  const { lapses_at: _lapses, ...rest } = c
  const lapsed = c.state === 'held' && c.lapses_at! <= now
  switch (step.op) {
    case 'commit':
      if (c.state !== 'pending' || by.node !== c.node || by.incarnation !== c.incarnation) return { ok: false, reason: c.state === 'pending' ? 'not_the_coordinator' : 'decided' }
      return put(c.hold_ms !== undefined ? { ...rest, state: 'held', lapses_at: now + c.hold_ms } : { ...rest, state: 'firm' })
    case 'abort':
      if (c.state !== 'pending') return { ok: false, reason: 'decided' }
      if ((by.node !== c.node || by.incarnation !== c.incarnation) && now < c.intent_at + c.timeout_ms) return { ok: false, reason: 'not_due' }
      return put({ ...rest, state: 'aborted' })
    case 'keep':
      if (c.state === 'firm') return { ok: true }
      if (c.state === 'expired') return { ok: false, reason: 'expired' }
      if (c.state !== 'held') return { ok: false, reason: 'claim_gone' }
      return lapsed ? { ok: false, reason: 'expired' } : put({ ...rest, state: 'firm' })
    case 'expire':
      return lapsed ? put({ ...rest, state: 'expired' }) : { ok: false, reason: 'not_due' }
    case 'give':
      if (c.state !== step.from) return { ok: false, reason: 'claim_gone' }
      return lapsed ? { ok: false, reason: 'expired' } : put({ ...rest, state: 'given' })
  }
}

/** What a claim's parts must do once a step moved it: keep or drop tentative parts, or give taken ones back. */
export function partsFollow (store: Store, claim: string): { op: 'settle', outcome: 'commit' | 'abort' } | { op: 'release' } | undefined {
  const state = store.capacityClaims.get(claim)?.state
  if (state === 'held' || state === 'firm') return { op: 'settle', outcome: 'commit' }
  if (state === 'aborted') return { op: 'settle', outcome: 'abort' }
  if (state === 'given' || state === 'expired') return { op: 'release' }
  return undefined
}

/**
 * Books a claim whose items are all in one partition whole, in one step: taken, declared and committed by `by` (a node
 * alone books every claim so; a cluster's partition log, a claim of its screens only). Call inside Store.write.
 */
export function bookWhole (store: Store, claim: string, partition: number, partitions: number, items: BookingItem[], holdMs: number | undefined, now: number, by: { node: string, incarnation: string }): ClaimOutcome {
  const lastDay = lastDayOf(items)
  const taken = takePart(store, claim, partition, partitions, items, now, 'taken', lastDay)
  if (!taken.ok) return taken
  stepClaim(store, { op: 'intent', claim, parts: [partition], timeout_ms: 0, ...(lastDay !== undefined ? { last_day: lastDay } : {}), ...(holdMs !== undefined ? { hold_ms: holdMs } : {}) }, now, by)
  stepClaim(store, { op: 'commit', claim }, now, by)
  return taken
}

/** A step of the life of a claim booked whole, its part following at once. Call inside Store.write. */
export function stepWhole (store: Store, step: ClaimStep, partition: number, now: number, by: { node: string, incarnation: string }): ClaimOutcome {
  const moved = stepClaim(store, step, now, by)
  if (moved.ok && partsFollow(store, step.claim)?.op === 'release') releasePart(store, step.claim, partition, now)
  return moved
}
