import type { ProofRecord } from '../generated/types.js'
import { isOpen, localTime } from '../inventory/local-time.js'
import type { ScreenRecord } from '../inventory/records.js'
import type { Store } from '../store/store.js'
import type { GivtReason } from './records.js'


/** Clock and rounding slack a player's timing is allowed around its slot. */
const TOLERANCE_MS = 1000

/** A play as the GIVT rules see it. */
export interface PlayTiming {
  timestamp: number
  durationMs: number
  completed: boolean
  slotSeconds: number
}

/**
 * General invalid traffic rules (MRC GIVT) a play is judged by where it is reported: longer than the slot; impossibly
 * short (under a quarter of the slot or a second) for a completed play; the screen off (outside its operating hours).
 * The burst rule needs the screen's other plays, so it is judged where the play takes its place in the chain
 * (judged). A duplicate impression id is judged there too (it gets no second proof).
 */
export function reportedRules (screen: ScreenRecord, play: PlayTiming): GivtReason[] {
  const slotMs = play.slotSeconds * 1000
  const reasons: GivtReason[] = []
  if (play.durationMs > slotMs + TOLERANCE_MS) reasons.push('longer_than_slot')
  if (play.completed && play.durationMs < Math.max(1000, slotMs / 4)) reasons.push('too_short')
  if (!isOpen(screen.operating_hours, localTime(screen.timezone, play.timestamp))) reasons.push('screen_offline')
  return reasons
}

/**
 * A play's GIVT verdict: the rules judged where it was reported, and a burst (another play on the screen less than one
 * slot before or after it, in whatever order they were reported) judged from the plays placed in the screen's chain
 * before it, which every node holding the chain has alike.
 */
export function judged (store: Store, screenId: string, play: Pick<PlayTiming, 'timestamp' | 'slotSeconds'>, reported: GivtReason[]): ProofRecord['givt'] {
  const gap = play.slotSeconds * 1000 - TOLERANCE_MS
  const near = store.proofTimes.getKeys({ start: [screenId, play.timestamp - gap + 1], end: [screenId, play.timestamp + gap], limit: 1 } as never)
  const reasons: GivtReason[] = reported.filter((r) => r !== 'screen_offline')
  if ([...near].length > 0) reasons.push('burst')
  if (reported.includes('screen_offline')) reasons.push('screen_offline')
  return { passed: reasons.length === 0, reasons }
}
