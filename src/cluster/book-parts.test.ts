import t from 'tap'
import type { Change } from '../store/changes.js'
import { bookMessages, bookSubject, partitionFilter } from './book-parts.js'
import { partitionOf } from './screen-partitions.js'
import { unpackValue } from './state-keys.js'

// A round of bids as messages of the book stream, one per partition of their screens on the partition's subject, so
// that a node consumes only the partitions it holds.

const bid = (screen: string, n: number): Change => ['bids', [screen, `t${n}`, 'seat'], { price: n, padding: 'x'.repeat(200) }]
const screens = Array.from({ length: 40 }, (_, i) => `screen-${i}`)

t.test('a round\'s bids go as one message a partition, each holding that partition\'s bids only', async (t) => {
  const rows = screens.map((s, i) => bid(s, i))
  const messages = bookMessages(rows, 16)
  const partitions = [...new Set(screens.map((s) => partitionOf(s, 16)))]
  t.same(messages.map((m) => m.partition).sort((a, b) => a - b), partitions.sort((a, b) => a - b), 'one message for each partition the round\'s screens fall in')
  for (const { partition, data } of messages) {
    t.same(unpackValue(data), rows.filter((r) => partitionOf((r[1] as string[])[0]!, 16) === partition), `partition ${partition}: its bids, in the round's order`)
  }
  t.same(bookMessages([], 16), [], 'no bids, no message')
})

t.test('a partition\'s bids past the size limit split into messages, each under it, together all of them', async (t) => {
  const rows = screens.flatMap((s, i) => [bid(s, i), bid(s, i + 100)])
  const messages = bookMessages(rows, 4, 2000)
  t.ok(messages.length > 4, `${messages.length} messages for 4 partitions`)
  t.ok(messages.every((m) => m.data.length <= 2000 + 64), 'each near the limit at most')
  t.equal(messages.flatMap((m) => unpackValue(m.data) as Change[]).length, rows.length, 'every bid once')
})

t.test('a partition\'s filter matches its subject from every node, and no other partition\'s', async (t) => {
  const matches = (filter: string, subject: string) => new RegExp(`^${filter.replaceAll('.', '\\.').replace('*', '[^.]+')}$`).test(subject)
  t.ok(matches(partitionFilter(3), bookSubject(3, 'node-1')))
  t.ok(matches(partitionFilter(3), bookSubject(3, 'node-2')))
  t.notOk(matches(partitionFilter(3), bookSubject(13, 'node-1')))
  t.notOk(matches(partitionFilter(1), bookSubject(13, 'node-1')))
})
