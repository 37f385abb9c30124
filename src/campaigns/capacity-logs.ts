// Screen time booked across a cluster (docs/architecture.md, "Bookings decided in the logs"): a claim's parts are
// decided in the logs of the partitions of its screens, each applied in its order by every node with the rules of
// capacity.ts. A claim in one partition (most: a hold of one screen) lives there whole, each step of its life one
// entry. A claim over several partitions is all or nothing, its life in the claims log: declared there, taken
// tentatively in each partition, committed there by its coordinator only if every part was taken (else aborted, by it
// or by anyone once its time is past), and the decision relayed to the parts.
import { prefixSlice, tableSlice, wholeTable } from '../cluster/checkpoints.js'
import type { PartitionMachine } from '../cluster/partition-log.js'
import type { Verdict } from '../cluster/records.js'
import { partitionOf } from '../cluster/screen-partitions.js'
import type { Store } from '../store/store.js'
import { bookWhole, claimLog, itemsByPartition, lastDayOf, partsFollow, releasePart, settlePart, stepClaim, stepWhole, sweepEnded, sweepPastDays, takePart, type CapacityLog, type ClaimStep } from './capacity.js'
import type { BookingItem, ClaimOutcome, Shortfall } from './records.js'

/** What a request's handler would book, in the order it asked, as its rehearsal recorded it. */
export type BookingCommand =
  | { op: 'take', claim: string, items: BookingItem[], hold_ms?: number }
  | { op: 'give', claim: string, why: 'release' | 'rebook' }
  | { op: 'keep', claim: string }

/** What the logs decided of a request's commands, by command (`take:<claim>`, `give:<claim>`, `keep:<claim>`). */
export type BookingDecisions = Array<[string, ClaimOutcome]>

/** The claims log's stream. */
export const CLAIMS_LOG = 'CLAIMS'

/** What a partition's log decides of a claim's part, or of a claim it holds whole. */
export type PartCommand =
  | { op: 'book', claim: string, items: BookingItem[], hold_ms?: number }
  | { op: 'step', step: ClaimStep }
  | { op: 'take', claim: string, items: BookingItem[], last_day?: string }
  | { op: 'settle', claim: string, outcome: 'commit' | 'abort' }
  | { op: 'release', claim: string }

/** The logs a node proposes to and applies. */
export interface CapacityLogs {
  readonly partitions: number
  /** Proposes a command; its verdict once this node has applied it, undefined when that is unknown in time. */
  propose (log: CapacityLog, key: string, body: PartCommand | ClaimStep): Promise<Verdict | undefined>
  /** Whether this node owns the log now (src/cluster/partition-owners.ts): a log's time-driven steps are its owner's. */
  owns (log: CapacityLog): boolean
}

function verdictOf (outcome: ClaimOutcome): Verdict {
  if (outcome.ok) return { status: 'accepted' }
  return { status: 'refused', reason: outcome.reason, ...('short' in outcome ? { result: outcome.short } : {}) }
}

/** A verdict as the ledger's outcome: unknown when there is none (no acknowledgement, or not applied in time). */
export function outcomeOf (verdict: Verdict | undefined): ClaimOutcome {
  if (verdict === undefined) return { ok: false, reason: 'unknown' }
  if (verdict.status === 'accepted') return { ok: true }
  if (verdict.reason === 'capacity_unavailable') return { ok: false, reason: 'capacity_unavailable', short: verdict.result as Shortfall }
  return { ok: false, reason: (verdict.reason ?? 'unknown') as Exclude<ClaimOutcome, { ok: true } | { reason: 'capacity_unavailable' }>['reason'] }
}

/** A claim's id: `@<partition>` appended when all its items are in one partition, which then decides its whole life. */
export function claimId (base: string, items: BookingItem[], partitions: number): string {
  const parts = itemsByPartition(items, partitions)
  return parts.size === 1 ? `${base}@${[...parts.keys()][0]!}` : base
}

/**
 * A partition's log applied on this node: the parts of claims in its screens, and the claims it holds whole. Its rows
 * are its screens' bookings and versions, its parts, and its whole claims: the slices of the capacity tables its
 * checkpoints hold.
 */
export function partitionMachine (store: Store, partition: number, partitions: number): PartitionMachine {
  const mine = (screen: string): boolean => partitionOf(screen, partitions) === partition
  return {
    tables: [
      tableSlice('booked', store.booked, ([screen]) => mine(screen)),
      tableSlice('booked_hours', store.bookedHours, ([screen]) => mine(screen)),
      prefixSlice('booked_days', store.bookedDays, partition),
      tableSlice('capacity_screens', store.capacityScreens, mine),
      tableSlice('capacity_parts', store.capacityParts, ([, p]) => p === partition),
      tableSlice('capacity_claims', store.capacityClaims, (claim) => claimLog(claim) === partition),
      tableSlice('capacity_lapses', store.capacityLapses, ([, claim]) => claimLog(claim) === partition),
      prefixSlice('capacity_ended', store.capacityEnded, partition)
    ],
    apply (body, at) {
      sweepEnded(store, partition, at.logTime)
      sweepPastDays(store, partition, at.logTime)
      const c = body as PartCommand
      switch (c.op) {
        case 'book': return verdictOf(bookWhole(store, c.claim, partition, partitions, c.items, c.hold_ms, at.logTime, at.from))
        case 'step': return verdictOf(stepWhole(store, c.step, partition, at.logTime, at.from))
        case 'take': return verdictOf(takePart(store, c.claim, partition, partitions, c.items, at.logTime, 'tentative', c.last_day))
        case 'settle': return verdictOf(settlePart(store, c.claim, partition, c.outcome, at.logTime))
        case 'release': return verdictOf(releasePart(store, c.claim, partition, at.logTime))
      }
    }
  }
}

/**
 * The claims log applied on this node. A claim that moved is kept among the open ones (capacityOpen) until its parts
 * follow, so that the node's recovery relays what a coordinator that stopped did not.
 */
export function claimsMachine (store: Store): PartitionMachine {
  return {
    tables: [
      tableSlice('capacity_claims', store.capacityClaims, (claim) => claimLog(claim) === 'claims'),
      tableSlice('capacity_lapses', store.capacityLapses, ([, claim]) => claimLog(claim) === 'claims'),
      wholeTable('capacity_open', store.capacityOpen),
      prefixSlice('capacity_ended', store.capacityEnded, 'claims')
    ],
    apply (body, at) {
      sweepEnded(store, 'claims', at.logTime)
      const step = body as ClaimStep
      const outcome = stepClaim(store, step, at.logTime, at.from)
      if (outcome.ok) store.capacityOpen.putSync(step.claim, true)
      return verdictOf(outcome)
    }
  }
}

/** Relays a claim's decision to its parts: settled as committed or aborted, or given back. */
async function relay (store: Store, logs: CapacityLogs, claim: string): Promise<void> {
  const follow = partsFollow(store, claim)
  const parts = store.capacityClaims.get(claim)?.parts ?? []
  if (follow === undefined) return
  await Promise.all(parts.map(async (p) => await logs.propose(p, `${follow.op}:${claim}`, { ...follow, claim })))
}

/**
 * Takes items under a claim across the partitions of their screens, all or nothing (the protocol above); resolves once
 * the claim is decided, with its outcome: capacity_unavailable naming a short item, or unknown when a step was not
 * decided in time (the claim is then aborted by recovery once its timeout has passed, unless it was committed).
 */
export async function takeClaim (store: Store, logs: CapacityLogs, claim: string, items: BookingItem[], holdMs: number | undefined, timeoutMs: number): Promise<ClaimOutcome> {
  const whole = claimLog(claim)
  if (whole !== 'claims') {
    const booked = outcomeOf(await logs.propose(whole, `book:${claim}`, { op: 'book', claim, items, ...(holdMs !== undefined ? { hold_ms: holdMs } : {}) }))
    // A retry's book is a duplicate of the first try's: it counts only while that claim still stands.
    return booked.ok && !standing(store, claim) ? { ok: false, reason: 'claim_gone' } : booked
  }
  const byPart = itemsByPartition(items, logs.partitions)
  const parts = [...byPart.keys()].sort((a, b) => a - b)
  // Its parts go with it once its last day is past, whatever their own items' last days.
  const lastDay = lastDayOf(items)
  const last = lastDay !== undefined ? { last_day: lastDay } : {}
  const declared = outcomeOf(await logs.propose('claims', `intent:${claim}`, { op: 'intent', claim, parts, timeout_ms: timeoutMs, ...last, ...(holdMs !== undefined ? { hold_ms: holdMs } : {}) }))
  if (!declared.ok) return declared
  const taken = (await Promise.all(parts.map(async (p) => await logs.propose(p, `take:${claim}`, { op: 'take', claim, items: byPart.get(p)!, ...last })))).map(outcomeOf)
  const refused = taken.find((o) => !o.ok)
  const decision = refused === undefined ? 'commit' : 'abort'
  const decided = outcomeOf(await logs.propose('claims', `${decision}:${claim}`, { op: decision, claim }))
  if (decided.ok || decided.reason === 'decided') await relay(store, logs, claim)
  if (standing(store, claim)) return { ok: true }
  return refused ?? (decided.ok ? { ok: false, reason: 'claim_gone' } : decided)
}

/** Whether a claim books its items now: held or firm, as this node has applied its log. */
function standing (store: Store, claim: string): boolean {
  const state = store.capacityClaims.get(claim)?.state
  return state === 'held' || state === 'firm'
}

/**
 * Moves a claim a step (kept, given, expired): in its partition when it holds it whole, else in the claims log, then
 * relays what its parts must do.
 */
export async function stepAndRelay (store: Store, logs: CapacityLogs, step: ClaimStep, key: string): Promise<ClaimOutcome> {
  const whole = claimLog(step.claim)
  if (whole !== 'claims') return outcomeOf(await logs.propose(whole, key, { op: 'step', step }))
  const moved = outcomeOf(await logs.propose('claims', key, step))
  if (moved.ok) await relay(store, logs, step.claim)
  return moved
}

/**
 * What a coordinator that stopped, or an engine that did not answer, left undone, as this node sees the claims log:
 * claims pending past their time are aborted, holds past their time lapse, and decisions the parts do not show yet
 * are relayed, each by the owner of the log it is decided in (its claim's partition, or the claims log), so that one
 * node proposes it. Steps are decided by the log's own time, so this node's clock only says when to try; its attempts
 * are keyed by the second, so that a new owner's and an old one's at once are one entry, and a try too early takes
 * nothing.
 */
export async function recoverClaims (store: Store, logs: CapacityLogs, now: number, graceMs: number): Promise<void> {
  const second = Math.floor(now / 1000)
  const lapsed = [...store.capacityLapses.getKeys({ end: [now - graceMs, '\uffff'] })].map((key) => (key as [number, string])[1]).filter((claim) => logs.owns(claimLog(claim)))
  await Promise.all(lapsed.map(async (claim) => await stepAndRelay(store, logs, { op: 'expire', claim }, `expire:${claim}:${second}`)))
  const owner = logs.owns('claims')
  // Read whole before the first await: a read that spans turns may see its snapshot renewed under it.
  for (const claim of [...store.capacityOpen.getKeys()]) {
    const c = store.capacityClaims.get(claim)
    if (c?.state === 'pending') {
      if (owner && now >= c.intent_at + c.timeout_ms + graceMs) await stepAndRelay(store, logs, { op: 'abort', claim }, `abort:${claim}:${second}`)
      continue
    }
    const follow = partsFollow(store, claim)
    const settled = c === undefined || c.parts.every((p) => {
      const part = store.capacityParts.get([claim, p])
      return part !== undefined && (follow?.op === 'settle' ? part.state !== 'tentative' : part.state === 'dropped')
    })
    // Every node forgets a claim its parts have settled; only the owner relays to parts that have not.
    if (settled) store.write(() => store.capacityOpen.removeSync(claim))
    else if (owner) await relay(store, logs, claim)
  }
}

/**
 * Decides a request's rehearsed commands in order (src/campaigns/rehearsed-bookings.ts), stopping at the first
 * refused: its handler stops there too. A give or keep is keyed by the request, so that two requests moving one
 * claim each get their own verdict (one wins), while the same request retried gets its first.
 */
export async function decideBookings (store: Store, logs: CapacityLogs, base: string, commands: BookingCommand[], timeoutMs: number): Promise<BookingDecisions> {
  const decisions: BookingDecisions = []
  for (const c of commands) {
    const key = `${c.op}:${c.claim}`
    const outcome = c.op === 'take'
      ? await takeClaim(store, logs, c.claim, c.items, c.hold_ms, timeoutMs)
      : await stepAndRelay(store, logs, c.op === 'keep' ? { op: 'keep', claim: c.claim } : { op: 'give', claim: c.claim, from: c.why === 'release' ? 'held' : 'firm' }, `${key}:${base}`)
    decisions.push([key, outcome])
    if (!outcome.ok) break
  }
  return decisions
}
