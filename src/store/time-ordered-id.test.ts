import t from 'tap'
import { timeOrderedUuid } from './time-ordered-id.js'

t.test('ids are RFC 9562 version 7 UUIDs, ordered by the millisecond they were made in', async (t) => {
  const at = Date.parse('2026-11-25T05:00:00.123Z')
  const id = timeOrderedUuid(at)
  t.match(id, /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/)
  t.equal(parseInt(id.replace(/-/g, '').slice(0, 12), 16), at, 'the first 48 bits are the millisecond')
  const ids = [at + 2, at, at + 1, at + 1000].map(timeOrderedUuid)
  t.same([...ids].sort(), [ids[1], ids[2], ids[0], ids[3]])
  t.not(timeOrderedUuid(at), timeOrderedUuid(at), 'two in one millisecond differ')
})
