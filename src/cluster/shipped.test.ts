import t from 'tap'
import { ShippedChanges } from './shipped.js'

t.test('a wait resolves when the shipped mark passes its seq, in any thread sharing the mark', async (t) => {
  const supervisor = new ShippedChanges()
  const thread = new ShippedChanges(supervisor.buffer)
  const second = thread.wait(2, 1000)
  const first = thread.wait(1, 1000)
  supervisor.advance(1)
  thread.woken()
  t.equal(await first, true)
  supervisor.advance(3)
  thread.woken()
  t.equal(await second, true)
  t.equal(await thread.wait(3, 1000), true, 'already shipped: at once')
  supervisor.advance(2)
  t.equal(thread.through, 3, 'the mark never moves back')
})

t.test('a wait the mark does not reach in time resolves false', async (t) => {
  const marks = new ShippedChanges()
  t.equal(await marks.wait(1, 20), false)
  marks.advance(1)
  t.equal(marks.through, 1)
})
