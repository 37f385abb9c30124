import t from 'tap'
import { audienceOfSegment, segmentIdOf } from '../inventory/segments.js'

// A FEIN segment's id is its definition: every node and every later request reads the same conditions from it.

t.test('ids spell the conditions and read back as them', async (t) => {
  t.equal(segmentIdOf({ min_faces: 10 }), 'fein_faces_10')
  t.equal(segmentIdOf({ min_faces: 5, min_attention: 0.7, emotion: 'happy' }), 'fein_faces_5_attention_70_happy')
  for (const c of [{ min_faces: 1 }, { min_attention: 0.55 }, { emotion: 'surprised' as const }, { min_faces: 20, emotion: 'neutral' as const }, { min_attention: 1 }]) {
    t.same(audienceOfSegment(segmentIdOf(c)), c, segmentIdOf(c))
  }
})

t.test('anything else is no segment of ours', async (t) => {
  for (const id of ['fein', 'fein_faces_0', 'fein_attention_101', 'fein_furious', 'fein_happy_faces_5', 'fein_faces_05', 'faces_5', 'fein_faces_5_', 'INVALID_SIGNAL_ID_DOES_NOT_EXIST_12345']) {
    t.equal(audienceOfSegment(id), undefined, id)
  }
})
