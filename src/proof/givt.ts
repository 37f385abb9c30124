import type { ProofRecord } from '../generated/types.js'
import type { ChainHead } from './chain.js'

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
 * General invalid traffic rules (MRC GIVT) a play can be judged by on its own and against its screen's last proof:
 * longer than the slot, impossibly short (under a quarter of the slot or a second) for a completed play, and a burst
 * (completed sooner after the screen's previous play than one slot allows).
 */
export function givtOf (play: PlayTiming, previous: ChainHead | undefined): ProofRecord['givt'] {
  const slotMs = play.slotSeconds * 1000
  const reasons: GivtReason[] = []
  if (play.durationMs > slotMs + TOLERANCE_MS) reasons.push('longer_than_slot')
  if (play.completed && play.durationMs < Math.max(1000, slotMs / 4)) reasons.push('too_short')
  if (previous !== undefined && play.timestamp - previous.timestamp < slotMs - TOLERANCE_MS) reasons.push('burst')
  return { passed: reasons.length === 0, reasons }
}
