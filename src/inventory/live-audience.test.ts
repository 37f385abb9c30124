import t from 'tap'
import { audienceMatches } from './live-audience.js'
import type { LiveSignals } from './fein.js'

// The one live-audience check (GET /adslots rows, AI agents' FEIN signals, placements targeted on them), on the
// signals as a row presents them: a stale signal is null.

const live = (over: Partial<LiveSignals> = {}): LiveSignals => ({ live_face_count: 12, attention_score: 0.6, dominant_emotion: 'happy', last_updated: '2026-11-27T00:00:00.000Z', ...over })

t.test('every condition must hold; none given, any audience does', async (t) => {
  t.ok(audienceMatches({}, live()))
  t.ok(audienceMatches({ min_faces: 12, min_attention: 0.6, emotion: 'happy' }, live()), 'the bounds are inclusive')
  t.notOk(audienceMatches({ min_faces: 13 }, live()))
  t.notOk(audienceMatches({ min_attention: 0.61 }, live()))
  t.notOk(audienceMatches({ emotion: 'neutral' }, live()))
  t.notOk(audienceMatches({ min_faces: 5, emotion: 'sad' }, live()), 'one failing condition is enough')
})

t.test('a signal no longer fresh (null) meets no condition on it', async (t) => {
  t.notOk(audienceMatches({ min_faces: 1 }, live({ live_face_count: null })))
  t.notOk(audienceMatches({ min_attention: 0 }, live({ attention_score: null })))
  t.notOk(audienceMatches({ emotion: 'happy' }, live({ dominant_emotion: null })))
  t.ok(audienceMatches({ min_faces: 1 }, live({ attention_score: null })), 'a condition on another signal is not affected')
})
