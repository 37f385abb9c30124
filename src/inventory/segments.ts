import type { LiveAudience } from '../generated/types.js'
import { schemas } from '../generated/schemas.js'
import type { Store } from '../store/store.js'

// FEIN segments: what an AdCP signal of ours is, and which a seat may target (packages and bids alike).

type Emotion = NonNullable<LiveAudience['emotion']>
const EMOTIONS: ReadonlySet<string> = new Set(schemas.LiveAudience.properties.emotion.enum)

/** The emotion FEIN measures by that name, if it measures one. */
export function emotionNamed (name: string): Emotion | undefined {
  return EMOTIONS.has(name) ? name as Emotion : undefined
}

/**
 * A segment's id, which is its definition (`fein_faces_5_attention_50_happy`): like a product id, nothing is stored
 * for a segment, and any node or later request reads the same conditions from it.
 */
export function segmentIdOf (c: LiveAudience): string {
  return ['fein', ...(c.min_faces !== undefined ? [`faces_${c.min_faces}`] : []), ...(c.min_attention !== undefined ? [`attention_${Math.round(c.min_attention * 100)}`] : []), ...(c.emotion !== undefined ? [c.emotion] : [])].join('_')
}

/** The conditions a segment id names; undefined for an id that is not one of ours. */
export function audienceOfSegment (id: string): LiveAudience | undefined {
  const m = /^fein(?:_faces_(\d{1,5}))?(?:_attention_(\d{1,3}))?(?:_([a-z]+))?$/.exec(id)
  if (m === null || (m[1] === undefined && m[2] === undefined && m[3] === undefined)) return undefined
  const c: LiveAudience = {}
  if (m[1] !== undefined) c.min_faces = Number(m[1])
  if (m[2] !== undefined) c.min_attention = Number(m[2]) / 100
  if (m[3] !== undefined) {
    const emotion = emotionNamed(m[3])
    if (emotion === undefined) return undefined
    c.emotion = emotion
  }
  if ((c.min_faces !== undefined && c.min_faces < 1) || (c.min_attention !== undefined && c.min_attention > 1) || segmentIdOf(c) !== id) return undefined
  return c
}

/** The live audience of a segment the seat activated (activate_signal); undefined for any other id. */
export function seatSegmentAudience (store: Store, seatId: string, segmentId: string): LiveAudience | undefined {
  const c = audienceOfSegment(segmentId)
  return c !== undefined && store.signalActivations.get([seatId.toLowerCase(), segmentId]) !== undefined ? c : undefined
}
