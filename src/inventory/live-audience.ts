import type { LiveAudience } from '../generated/types.js'
import type { LiveSignals } from './fein.js'

/**
 * Whether a screen's live signals, as a row presents them (a stale signal is null), meet every condition: the one
 * live filter that GET /adslots, an AI agent's FEIN signals and the placements targeted on them apply.
 */
export function audienceMatches (c: LiveAudience, live: LiveSignals): boolean {
  if (c.min_faces !== undefined && (live.live_face_count === null || live.live_face_count < c.min_faces)) return false
  if (c.min_attention !== undefined && (live.attention_score === null || live.attention_score < c.min_attention)) return false
  if (c.emotion !== undefined && live.dominant_emotion !== c.emotion) return false
  return true
}
