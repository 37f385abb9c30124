import { chargePlay } from '../campaigns/budget.js'
import { recordDelivery } from '../campaigns/lifecycle.js'
import type { FunnelLog } from '../events/funnel.js'
import { ApiError } from '../errors.js'
import type { FunnelEvent, ProofRecord, SpotEventResult } from '../generated/types.js'
import { impressionMultiplier } from '../inventory/fein.js'
import { localTime, minutesUntilOpen } from '../inventory/local-time.js'
import type { Metrics } from '../http/metrics.js'
import type { Notices } from '../notify/notices.js'
import { signPlay, type ProofDeps } from '../proof/chain.js'
import { placePlays, thenProved, type Proved } from '../proof/placing.js'
import type { ProofCommand } from '../proof/records.js'
import type { CreativeRecord } from '../creatives/records.js'
import type { ScreenRecord } from '../inventory/records.js'
import type { SpotRecord, Tier } from './records.js'
import type { Store } from '../store/store.js'
import { timeOrderedUuid } from '../store/time-ordered-id.js'
import { fromMicros, playCostMicros } from '../money.js'
import type { ScreenClaims } from '../bidding/auction/claims.js'
import { applySettlements, settleBilling, settlementOf, type Settlement, type SettleDeps } from '../bidding/auction/settle.js'
import { decide } from '../bidding/auction/waterfall.js'
import { gather } from '../bidding/auction/gather.js'
import { addToHour } from '../bidding/hour-stats.js'

/** How long a closed screen waits before asking again, at most. */
const CLOSED_RETRY_SECONDS = 300
/** Clock skew tolerated between a player and the service. */
const SKEW_MS = 60_000

/** The screen an embed token addresses (404 screen_not_found otherwise). */
export function screenOfToken (store: Store, token: string): ScreenRecord {
  const id = screenIdOfToken(store, token)
  const screen = id !== undefined ? store.screens.get(id) : undefined
  if (screen === undefined) throw new ApiError('screen_not_found', 'No screen has this embed token; use the embed_url its device registration returned.', { param: 'token' })
  return screen
}

/**
 * The screen an embed token's request is about (RouteDef.screen): its spots, and the reports of their plays, are
 * decided where the screen's bids are (on a cluster, its partition's owner). An unknown token is answered where it
 * lands (404).
 */
export function screenIdOfToken (store: Store, token: string): string | undefined {
  return store.embeds.get(token)
}

/**
 * A screen's next spot: closed (and for how long), the spot recorded with the creative it plays, or nothing to play
 * (the house tier without a house creative), which records no spot: there is no play to report.
 */
export type TakenSpot = { closed: true, waitSeconds: number } | ({ closed: false, counts?: Counts } & ({ record: SpotRecord, creative: CreativeRecord } | { record?: undefined, tier: Tier }))

/**
 * Whether a decision counts, asked once its writes have committed: a cluster node's decision counts only once its
 * screen's partition's log accepts its settlement (Share.settlements). Absent where the commit is enough.
 */
export type Counts = () => Promise<boolean>

/**
 * Fences a decision's settlement where the node's share says (a cluster node): the settlement gets its key in the
 * partition's log, and the decision counts once the log accepts it.
 */
function fenced (store: Store, settlement: Settlement, id: string): Counts | undefined {
  const fence = store.share.settlements
  if (fence === undefined) return undefined
  const key = settlement.key = `stl_${id}`
  return async () => await fence.verdict(key)
}

/**
 * What a spot decision writes, applied with the rest of its thread's turn (applySpots): its auction funnel event, the
 * spot when something plays, what it settled, and the play of the pacing line that played.
 */
export interface SpotWrite {
  screen_id: string
  event: FunnelEvent
  record?: SpotRecord
  settled?: Settlement
  /** [screen_id, local date, line]: the placement or guaranteed deal whose plays today count one more. */
  play?: [string, string, string]
}

/** What taking a spot needs: the store, the notice queue, the funnel, metrics, the screens' claims and the journal. */
export interface SpotDeps {
  store: Store
  notices: Notices
  funnel: FunnelLog
  metrics: Metrics
  /** One decision per screen at a time, across hot threads. */
  claims: ScreenClaims
  /**
   * The hot thread's journal: makes a decision's writes durable, applied in a transaction now or with its turn, and
   * waits for what other threads' journals hold (Journal.awaitOthers).
   */
  journal: { record (entry: { spot: SpotWrite }): void, flush (): void, awaitOthers (deadline: number): boolean }
}

/** How long a decision waits for another hot thread's decision on the same screen to be applied, at most. */
const CLAIM_WAIT_MS = 250

export const spotInProgress = (): ApiError => new ApiError('spot_in_progress', 'Another spot decision for this screen is being recorded; ask again in a moment.', { retry_after_seconds: 1 }, { 'Retry-After': '1' })

/**
 * For a route that reports on a spot, in its prepare (before any write transaction): a spot another thread decided a
 * moment ago may not be in LMDB yet (its turn commits after the answer), so what every thread answered before now is
 * waited for, as long as a decision waits for a claim at most. False if a thread's turn had not committed by then.
 */
export function awaitSpot ({ store, journal }: SpotDeps, spotId: string): boolean {
  if (store.spots.get(spotId) !== undefined) return true
  const answered = journal.awaitOthers(performance.now() + CLAIM_WAIT_MS)
  store.refresh()
  return answered
}

/** The cluster node that decided a spot, from its id; undefined for a node alone's. */
export function deciderOf (spotId: string): string | undefined {
  const dot = spotId.lastIndexOf('.')
  return dot < 0 ? undefined : spotId.slice(dot + 1)
}

/** The spot given to the screen, for its reports; waited: what awaitSpot answered in the route's prepare. */
export function givenSpot ({ store }: SpotDeps, screen: ScreenRecord, spotId: string, waited: boolean): SpotRecord {
  const spot = store.spots.get(spotId)
  if (spot === undefined && !waited) throw spotInProgress()
  if (spot === undefined || spot.screen_id !== screen.screen_id) throw new ApiError('spot_not_found', `No spot ${spotId} was given to this screen.`, { param: 'spot_id' })
  return spot
}

/**
 * Claims the screen for this thread's decision (ScreenClaims), and reads what every decision on it before has
 * written and every bid a thread acknowledged before it (JournalTurns). A decision of this thread's own, journaled
 * and not yet applied, is applied first; another thread's is waited for, after this thread's journal is applied, so
 * that no two threads wait on each other. Inside a write
 * transaction (an Idempotency-Key, a dry run) nothing can be applied or waited for without the writer lock this
 * request holds: a screen claimed there is 409 spot_in_progress, and the claim ends with the transaction.
 */
function claimScreen ({ store, claims, journal }: SpotDeps, screenId: string): void {
  if (store.inTransaction) {
    if (claims.take(screenId) !== 'taken') throw spotInProgress()
    store.afterEnd(() => claims.release(screenId))
    return
  }
  let seen = claims.released
  let held = claims.take(screenId)
  if (held === 'mine') {
    journal.flush()
    seen = claims.released
    held = claims.take(screenId)
  }
  const deadline = performance.now() + CLAIM_WAIT_MS
  while (held === 'other') {
    journal.flush()
    if (!claims.wait(seen, deadline)) throw spotInProgress()
    seen = claims.released
    held = claims.take(screenId)
  }
  // A bid another thread acknowledged before this request is in the auction: its turn commits before the snapshot.
  if (!journal.awaitOthers(deadline)) {
    claims.release(screenId)
    throw spotInProgress()
  }
  // An intake being applied now looked for this claim before it existed, and may commit after the snapshot below.
  if (claims.intakeUnderway) claims.mark(screenId)
  store.refresh()
}

/**
 * Runs the waterfall for a screen now and records the spot it decides, settling every stored bid on the screen
 * (winner's nurl, losers' lurl) and counting the auction. The JSON feed and the VAST tag both serve spots from here.
 * The decision is taken from a snapshot under the screen's claim, and its writes go through the hot thread's journal
 * (deps.journal) like a bid's: durable before the answer, in LMDB with the rest of the turn, when the claim ends.
 */
export function takeSpot (deps: SpotDeps, screen: ScreenRecord, now: number): TakenSpot {
  const { store, claims } = deps
  const screenId = screen.screen_id
  claimScreen(deps, screenId)
  try {
    const decision = decide(gather(store, screen, now))
    if (decision.tier === 'closed') {
      claims.release(screenId)
      store.afterCommit(() => deps.metrics.spot(screenId, decision.tier, false, now))
      return { closed: true, waitSeconds: Math.min(CLOSED_RETRY_SECONDS, (minutesUntilOpen(screen.operating_hours, localTime(screen.timezone, now)) ?? 60) * 60) }
    }
    const settled = decision.winner !== undefined || decision.losses.length > 0
    const event: FunnelEvent = { stage: 'auction', at: now, screens: [screenId], tier: decision.tier, competitors: decision.losses.length + (decision.winner !== undefined ? 1 : 0) }
    const creative = decision.creative
    if (creative === undefined) {
      // Nothing plays (a winner or a line always has its creative): only the decision is counted.
      const write: SpotWrite = { screen_id: screenId, event }
      let counts: Counts | undefined
      if (settled) counts = fenced(store, write.settled = settlementOf(store, screen, decision.losses, undefined, decision.tier, '', now), timeOrderedUuid(now))
      deps.journal.record({ spot: write })
      return counts !== undefined ? { closed: false, tier: decision.tier, counts } : { closed: false, tier: decision.tier }
    }
    // A cluster node's spot names it: reports on the spot go to it, which keeps the spot (deciderOf).
    const spotId = `spt_${timeOrderedUuid(now)}${store.share.node !== undefined ? `.${store.share.node}` : ''}`
    const record: SpotRecord = { spot_id: spotId, screen_id: screenId, tier: decision.tier, decided_at: now, starts_at: now, duration_seconds: screen.slot_duration_seconds, status: 'served', creative_id: creative.creative_id }
    if (decision.winner !== undefined) {
      const { bid, clearing } = decision.winner
      record.bid = { ...bid, clearing }
      record.seat_id = bid.seat_id
      if (bid.dealid !== undefined) record.deal_id = bid.dealid
      if (bid.adm !== undefined) record.adm = bid.adm
    }
    if (decision.assignment !== undefined) {
      record.assignment_id = decision.assignment.assignment_id
      record.seat_id = decision.assignment.seat_id
      if (decision.assignment.campaign_id !== undefined) record.campaign_id = decision.assignment.campaign_id
      if (decision.cpm !== undefined) record.cpm = decision.cpm
    }
    event.spot_id = spotId
    event.creative_id = creative.creative_id
    if (record.seat_id !== undefined) event.seat_id = record.seat_id
    if (record.bid !== undefined) {
      event.clearing_cpm = record.bid.clearing
      event.multiplier = record.bid.multiplier
    }
    const write: SpotWrite = { screen_id: screenId, event, record }
    let counts: Counts | undefined
    if (settled) counts = fenced(store, write.settled = settlementOf(store, screen, decision.losses, decision.winner, decision.tier, spotId, now), spotId)
    if (decision.line !== undefined) write.play = [screenId, decision.local.date, decision.line]
    deps.journal.record({ spot: write })
    return counts !== undefined ? { closed: false, record, creative, counts } : { closed: false, record, creative }
  } catch (err) {
    claims.release(screenId)
    throw err
  }
}

/**
 * Writes decided spots: what each settled, its line's play, the spot and its funnel event, counted once committed
 * (a dry run's are rolled back); then each screen's claim ends. Call inside Store.write. replay: the writes come from
 * a journal after its thread died, when whether a bid was replaced meanwhile is not known (applySettlements).
 */
export function applySpots (deps: SettleDeps & { funnel: FunnelLog, metrics: Metrics, claims: ScreenClaims }, writes: readonly SpotWrite[], replay = false): void {
  const { store, funnel, metrics, claims } = deps
  const settlements = []
  for (const { screen_id: screenId, event, settled } of writes) if (settled !== undefined) settlements.push({ settlement: settled, at: event.at, check: replay || claims.changed(screenId) })
  if (settlements.length > 0) applySettlements(deps, settlements)
  for (const { screen_id: screenId, event, record, play } of writes) {
    if (play !== undefined) store.plays.putSync(play, (store.plays.get(play) ?? 0) + 1)
    if (record !== undefined) store.spots.putSync(record.spot_id, record)
    funnel.append(event)
    store.afterCommit(() => {
      claims.release(screenId)
      metrics.spot(screenId, event.tier!, record?.bid !== undefined, event.at)
    })
  }
}

/** A player's report on a spot: what it says, when, and how the play is verified. */
export interface SpotEventInput {
  event: 'render_started' | 'play_completed'
  at?: number
  durationMs?: number
  /** signed: the JSON player reported it; event_confirmed: a VAST tracking event did. */
  tier: ProofRecord['verification_tier']
}

/**
 * Records render_started or play_completed of a spot once: the render confirms the impression multiplier (a
 * placement's too, so that its campaign counts impressions as bids do); the
 * completion bills a bid spot (spend, burl), counts a placement's delivery and signs a proof of play, answered once
 * the proof has its place in the screen's chain (src/proof/placing.ts). A repeat changes nothing and says duplicate.
 */
export function spotEvent ({ store, notices, funnel, outbox, proofSigner }: ProofDeps & { notices: Notices }, screen: ScreenRecord, spot: SpotRecord, input: SpotEventInput, now: number, dryRun = false): Proved<SpotEventResult> {
  const at = input.at ?? now
  if (at < spot.decided_at - SKEW_MS || at > now + SKEW_MS) throw new ApiError('invalid_parameter', 'at must lie between the spot\'s decision and now (epoch ms).', { param: 'at' })
  const event = input.event
  const result: SpotEventResult = { spot_id: spot.spot_id, event, status: spot.status, duplicate: false }
  const next: SpotRecord = { ...spot }
  let play: ProofCommand | undefined
  if (event === 'render_started') {
    if (spot.started_at !== undefined) return { ...result, duplicate: true }
    next.started_at = at
    if (spot.status === 'served') next.status = 'started'
    // The audience the render saw: a bid pays for at most the audience it was offered; a placement counts it all.
    const audience = impressionMultiplier(store.fein.get(screen.screen_id), screen.capabilities.fein, now)
    next.multiplier = spot.bid !== undefined ? Math.min(spot.bid.multiplier, audience) : audience
    funnel.append({ stage: 'render_started', at, screens: [screen.screen_id], spot_id: spot.spot_id, tier: spot.tier, ...(spot.seat_id !== undefined ? { seat_id: spot.seat_id } : {}), ...(spot.creative_id !== undefined ? { creative_id: spot.creative_id } : {}) })
  } else {
    if (spot.status === 'completed') return { ...result, duplicate: true }
    next.status = 'completed'
    next.completed_at = at
    next.started_at ??= at - (input.durationMs ?? spot.duration_seconds * 1000)
    const multiplier = next.multiplier ?? spot.bid?.multiplier ?? 1
    next.multiplier = multiplier
    if (spot.bid !== undefined) {
      const cost = playCostMicros(spot.bid.clearing, multiplier)
      next.cost_micros = cost
      addToHour(store, spot.bid.seat_id, now, (h) => { h.spend_usd = fromMicros(Math.round(h.spend_usd * 1e6) + cost) })
      settleBilling({ store, notices }, spot.bid, multiplier, at, now)
      result.billed = true
    }
    const campaign = spot.campaign_id !== undefined ? store.campaigns.get(spot.campaign_id) : undefined
    if (campaign !== undefined && spot.cpm !== undefined) next.cost_micros = chargePlay(store, outbox, campaign, spot.cpm, multiplier, now)
    else if (campaign !== undefined) recordDelivery(store, outbox, campaign.campaign_id, Math.max(1, Math.round(multiplier)), 0, now)
    if (spot.creative_id !== undefined) {
      const durationMs = Math.round(input.durationMs ?? at - next.started_at)
      play = signPlay(store, proofSigner, screen, { timestamp: at, adId: spot.creative_id, impressionId: spot.spot_id, screenId: screen.screen_id, deviceId: screen.device_id }, {
        verification_tier: input.tier,
        seat_id: spot.seat_id ?? null,
        creative_id: spot.creative_id,
        spot_id: spot.spot_id,
        duration_ms: durationMs,
        completed: true
      }, spot.duration_seconds)
    }
    funnel.append({
      stage: 'play_completed', at, screens: [screen.screen_id], spot_id: spot.spot_id, tier: spot.tier, multiplier,
      ...(input.durationMs !== undefined ? { duration_ms: input.durationMs } : {}),
      ...(spot.seat_id !== undefined ? { seat_id: spot.seat_id } : {}),
      ...(spot.creative_id !== undefined ? { creative_id: spot.creative_id } : {}),
      ...(spot.bid !== undefined ? { clearing_cpm: spot.bid.clearing } : spot.cpm !== undefined ? { clearing_cpm: spot.cpm } : {}),
      ...(next.cost_micros !== undefined ? { cost_usd: fromMicros(next.cost_micros) } : {})
    })
  }
  store.spots.putSync(spot.spot_id, next)
  result.status = next.status
  if (play === undefined) return result
  // The play is billed by its spot, whatever its proof's verdict: a partner's callback for the spot may have proven it first.
  return thenProved(placePlays({ store, outbox, funnel }, [play], now, dryRun), ([verdict]) => 'proof_id' in verdict! ? { ...result, proof_id: verdict.proof_id } : result)
}
