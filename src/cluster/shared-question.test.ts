import t from 'tap'
import { SharedQuestion } from './shared-question.js'

// Callers catching up at the same moment ask the engine once, never taking an answer asked for before they came.

t.test('callers share the question on its way only if they came before it was asked; later ones share the next', async (t) => {
  const asked: Array<(n: number) => void> = []
  const q = new SharedQuestion(async () => await new Promise<number>((resolve) => asked.push(resolve)))
  const first = q.answer()
  const second = q.answer()
  const third = q.answer()
  t.equal(asked.length, 1, 'one question on its way')
  t.equal(second, third, 'the callers that came while it was out share the next one')
  asked[0]!(1)
  t.equal(await first, 1)
  await new Promise((resolve) => setImmediate(resolve))
  t.equal(asked.length, 2, 'the next is asked once the first is answered')
  asked[1]!(2)
  t.same([await second, await third], [2, 2])
})

t.test('a question that fails fails its callers, and the next is asked anew', async (t) => {
  let n = 0
  const q = new SharedQuestion(async () => { if (++n === 1) throw new Error('no answer'); return n })
  await t.rejects(q.answer(), /no answer/)
  t.equal(await q.answer(), 2)
})
