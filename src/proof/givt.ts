import type { ProofRecord } from '../generated/types.js'
import { isOpen, localTime } from '../inventory/local-time.js'
import type { ScreenRecord } from '../inventory/records.js'
import type { Store } from '../store/store.js'

/** A GIVT rule that fired. */
export type GivtReason = ProofRecord['givt']['reasons'][number]

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
 * General invalid traffic rules (MRC GIVT) for a play on a screen: longer than the slot; impossibly short (under a
 * quarter of the slot or a second) for a completed play; a burst (another play on the screen less than one slot
 * before or after it, in whatever order they were reported); the screen off (outside its operating hours). A
 * duplicate impression id is judged before a play gets here (it gets no second proof).
 */
export function givtOf (store: Store, screen: ScreenRecord, play: PlayTiming): ProofRecord['givt'] {
  const slotMs = play.slotSeconds * 1000
  const reasons: GivtReason[] = []
  if (play.durationMs > slotMs + TOLERANCE_MS) reasons.push('longer_than_slot')
  if (play.completed && play.durationMs < Math.max(1000, slotMs / 4)) reasons.push('too_short')
  const gap = slotMs - TOLERANCE_MS
  const near = store.proofTimes.getKeys({ start: [screen.screen_id, play.timestamp - gap + 1], end: [screen.screen_id, play.timestamp + gap], limit: 1 } as never)
  if ([...near].length > 0) reasons.push('burst')
  if (!isOpen(screen.operating_hours, localTime(screen.timezone, play.timestamp))) reasons.push('screen_offline')
  return { passed: reasons.length === 0, reasons }
}
