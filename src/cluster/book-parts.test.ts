import t from 'tap'
import type { Change } from '../store/changes.js'
import { bookRows, EVERY_NODE, packBook } from './book-parts.js'
import { partitionOf } from './screen-partitions.js'
import { packValue } from './state-keys.js'

// A round of the book as messages: each bid under its screen's partition, every other row under EVERY_NODE, so that a
// node unpacks only what it applies.

const bid = (screen: string, n: number): Change => ['bids', [screen, `t${n}`, 'seat'], { price: n, padding: 'x'.repeat(200) }]
const screens = Array.from({ length: 40 }, (_, i) => `screen-${i}`)

t.test('a node reads only the bids of the partitions it holds, and every node\'s rows', async (t) => {
  const rows = [...screens.map((s, i) => bid(s, i)), ['stats', ['seat', 0, 'node-1'], { bids: 40 }] as Change]
  const [message, ...more] = packBook(rows, 16)
  t.equal(more.length, 0, 'one message for a small round')
  const held = partitionOf('screen-3', 16)
  const read: Array<[number, Change[]]> = []
  bookRows(message!, 16, (p) => p === held, (p, r) => read.push([p, r]))
  t.same(read.map(([p]) => p).sort((a, b) => a - b), [EVERY_NODE, held], 'the held partition and every node\'s part, nothing else unpacked')
  t.same(read.find(([p]) => p === held)![1], rows.filter((r) => r[0] === 'bids' && partitionOf((r[1] as string[])[0]!, 16) === held), 'all of the held partition\'s bids')
  t.same(read.find(([p]) => p === EVERY_NODE)![1], [rows[40]], 'the seat\'s counters, which every node applies')
  const all: Change[] = []
  bookRows(message!, 16, () => true, (_p, r) => all.push(...r))
  t.same(new Set(all.map((r) => JSON.stringify(r))), new Set(rows.map((r) => JSON.stringify(r))), 'a node holding every partition reads the whole round')
})

t.test('a round past the size limit splits into messages, each under it, together the whole round', async (t) => {
  const rows = screens.flatMap((s, i) => [bid(s, i), bid(s, i + 100)])
  const messages = packBook(rows, 4, 2000)
  t.ok(messages.length > 1, `${messages.length} messages`)
  t.ok(messages.every((m) => m.length <= 2000 + 64), 'each near the limit at most')
  const all: Change[] = []
  for (const m of messages) bookRows(m, 4, () => true, (_p, r) => all.push(...r))
  t.equal(all.length, rows.length, 'every row once')
  t.same(packBook([], 4), [], 'no rows, no message')
})

t.test('a round shipped before rows were grouped is read alike', async (t) => {
  const rows = [bid('screen-1', 1), bid('screen-2', 2), ['stats', ['seat', 0, 'node-1'], { bids: 2 }] as Change]
  const held = partitionOf('screen-1', 16)
  const read: Change[] = []
  bookRows(packValue(rows), 16, (p) => p === held, (_p, r) => read.push(...r))
  t.not(partitionOf('screen-2', 16), held, 'two screens of two partitions')
  t.same(read, [rows[0]!, rows[2]!], 'the held partition\'s bids and every node\'s rows, the other partition\'s left')
})
