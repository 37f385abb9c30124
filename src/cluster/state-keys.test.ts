import t from 'tap'
import { packValue, parseStateKey, stateKey, unpackValue } from './state-keys.js'

t.test('any LMDB key becomes a KV key of allowed characters and comes back the same', async (t) => {
  for (const key of ['seat_1', 'Seat With Spaces/and:colons', 42, ['creative', 'seat', -1764000000000, 'cr_1'], 'ü€']) {
    const kv = stateKey('by_seat', key)
    t.match(kv, /^[-/_=.a-zA-Z0-9]+$/, JSON.stringify(key))
    t.same(parseStateKey(kv), { table: 'by_seat', key })
  }
  t.same(unpackValue(packValue({ a: 1, b: [null, 'x'] })), { a: 1, b: [null, 'x'] })
})
