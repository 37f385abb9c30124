import type { AudienceUpdate, FeinSignals } from '../generated/types.js'
import type { FeinState, Signal } from './records.js'

const HOUR = 3_600_000
const DAY = 24 * HOUR

/** How long each signal may be presented as current (spec, FEIN audience signals). */
export const FRESHNESS = {
  live_face_count: 10_000,
  attention_score: 10_000,
  dominant_emotion: 10_000,
  crowd_density: 10_000,
  purchase_intent: 30_000,
  ad_receptivity: 30_000,
  dwell_time_ms: 30_000,
  income_level: HOUR
} as const satisfies Record<Signal, number>

const SIGNALS = Object.keys(FRESHNESS) as Signal[]

/** The order of data_quality in listings: live first. */
export const QUALITY_RANK = { live: 0, historical: 1, none: 2 } as const
export type Quality = keyof typeof QUALITY_RANK

export function emptyFein (): FeinState {
  return { values: {}, at: {}, last_updated: null, hours: [] }
}

/** Applies one measurement; signals it omits keep their value and age. */
export function applyUpdate (state: FeinState, u: AudienceUpdate, at: number): FeinState {
  const values = { ...state.values }
  const stamps = { ...state.at }
  for (const s of SIGNALS) {
    const v = u[s]
    if (v === undefined) continue
    values[s] = v
    stamps[s] = at
  }
  const hourStart = Math.floor(at / HOUR) * HOUR
  const hours = state.hours.filter((h) => h[0] > at - 7 * DAY)
  let bucket = hours.find((h) => h[0] === hourStart)
  if (bucket === undefined) {
    bucket = [hourStart, 0, 0, 0, 0, 0]
    hours.push(bucket)
    hours.sort((a, b) => a[0] - b[0])
  }
  if (u.live_face_count !== undefined || u.attention_score !== undefined) {
    bucket[1] += u.live_face_count ?? 0
    bucket[2] += u.attention_score ?? 0
    bucket[3] += 1
  }
  if (u.vas_seconds !== undefined) {
    bucket[4] += u.vas_seconds
    bucket[5] += u.vas_plays ?? 1
  }
  return { values, at: stamps, last_updated: Math.max(state.last_updated ?? 0, at), hours }
}

/**
 * Verified attention seconds per play over the last 7 days, each day weighted 7 (today) down to 1 (six days ago) and
 * by its plays, or null without plays.
 */
export function vas7d (state: FeinState, now: number): number | null {
  let weighted = 0
  let weights = 0
  for (const [start, , , , seconds, plays] of state.hours) {
    const age = Math.floor((now - start) / DAY)
    if (age < 0 || age > 6 || plays === 0) continue
    const w = (7 - age) * plays
    weighted += w * (seconds / plays)
    weights += w
  }
  return weights === 0 ? null : Math.round((weighted / weights) * 100) / 100
}

/** Whether a signal is within its freshness window. */
function fresh (state: FeinState, s: Signal, now: number): boolean {
  const at = state.at[s]
  return at !== undefined && now - at <= FRESHNESS[s] && now >= at - 60_000
}

/** live: a 10-second signal is fresh; historical: only VAS history; none: no sensors or no data. */
export function quality (state: FeinState | undefined, sensors: boolean, now: number): Quality {
  if (!sensors || state === undefined) return 'none'
  if (fresh(state, 'live_face_count', now) || fresh(state, 'attention_score', now)) return 'live'
  return vas7d(state, now) !== null ? 'historical' : 'none'
}

/** When a live screen stops being live if nothing new arrives (ms), or undefined when it is not live. */
export function liveUntil (state: FeinState, now: number): number | undefined {
  const until = Math.max(state.at.live_face_count ?? 0, state.at.attention_score ?? 0) + FRESHNESS.live_face_count
  return until > now ? until : undefined
}

/** One signal as presented at `now`: null when stale or absent, never shown as live. */
function shown<T> (state: FeinState | undefined, sensors: boolean, s: Signal, now: number): T | null {
  return state !== undefined && sensors && fresh(state, s, now) ? (state.values[s] as T) ?? null : null
}

/** When the signals were last updated, as presented. */
function lastUpdated (state: FeinState | undefined, sensors: boolean): string | null {
  return state?.last_updated != null && sensors ? new Date(state.last_updated).toISOString() : null
}

/**
 * The signals as presented to buyers at `now`: stale ones are null, never shown as live. A listing passes `ranked`,
 * the data quality and vas_7d of the screen's place in the adslots order, so that a row shows what it was ordered
 * and filtered by.
 */
export function present (state: FeinState | undefined, sensors: boolean, now: number, ranked?: { quality: Quality, vas: number | null }): FeinSignals {
  const value = <T>(s: Signal): T | null => shown<T>(state, sensors, s, now)
  return {
    live_face_count: value<number>('live_face_count'),
    attention_score: value<number>('attention_score'),
    dominant_emotion: value<FeinSignals['dominant_emotion']>('dominant_emotion'),
    vas_7d: ranked !== undefined ? ranked.vas : state !== undefined && sensors ? vas7d(state, now) : null,
    crowd_density: value<number>('crowd_density'),
    purchase_intent: value<string>('purchase_intent'),
    ad_receptivity: value<number>('ad_receptivity'),
    income_level: value<FeinSignals['income_level']>('income_level'),
    dwell_time_ms: value<number>('dwell_time_ms'),
    data_quality: ranked?.quality ?? quality(state, sensors, now),
    last_updated: lastUpdated(state, sensors)
  }
}

/** The live signals of a screen row (ScreenSummary.live). */
export type LiveSignals = Pick<FeinSignals, 'live_face_count' | 'attention_score' | 'dominant_emotion' | 'last_updated'>

/**
 * The live signals a screen row shows (ScreenSummary.live), as present() gives them for a screen with sensors,
 * without computing the rest (the VAS average among them) for every row of a page.
 */
export function liveSignals (state: FeinState | undefined, now: number): LiveSignals {
  return {
    live_face_count: shown(state, true, 'live_face_count', now),
    attention_score: shown(state, true, 'attention_score', now),
    dominant_emotion: shown(state, true, 'dominant_emotion', now),
    last_updated: lastUpdated(state, true)
  }
}

/**
 * The OpenRTB 2.6 imp.qty multiplier for a DOOH spot: how many people one play reaches. Live face count when fresh,
 * else the 7-day average face count, else 1.
 */
export function impressionMultiplier (state: FeinState | undefined, sensors: boolean, now: number): number {
  if (state === undefined || !sensors) return 1
  if (fresh(state, 'live_face_count', now)) return Math.max(1, Number(state.values.live_face_count ?? 1))
  let faces = 0
  let samples = 0
  for (const h of state.hours) if (now - h[0] <= 7 * DAY) { faces += h[1]; samples += h[3] }
  return samples > 0 ? Math.max(1, Math.round((faces / samples) * 100) / 100) : 1
}
