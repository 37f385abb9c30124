import type { CreativeWeight } from '../generated/types.js'

/** The golden ratio's fractional part: its multiples spread over [0, 1) as evenly as any sequence can. */
const GOLDEN = 0.6180339887498949

/**
 * Which of several weighted creatives plays a placement's spot number n on a screen and day: each gets its weight's
 * share of any run of spots, interleaved rather than in blocks, and the choice needs no state beyond the count of plays
 * the waterfall already keeps. Answers an index into weights (which must not be empty).
 */
export function rotationSlot (weights: readonly number[], n: number): number {
  const total = weights.reduce((a, b) => a + b, 0)
  let at = (((n + 1) * GOLDEN) % 1) * total
  for (const [i, w] of weights.entries()) {
    if (at < w) return i
    at -= w
  }
  return weights.length - 1
}

/** A placement's rotation as given, or its one creative at weight 1. */
export function rotationOf (a: { creative_id: string, rotation?: CreativeWeight[] }): CreativeWeight[] {
  return a.rotation ?? [{ creative_id: a.creative_id, weight: 1 }]
}
