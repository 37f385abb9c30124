import t from 'tap'
import { rotationOf, rotationSlot } from './rotation.js'

// A package's creatives share its spots by weight, interleaved, from nothing but the count of plays so far.

const counts = (weights: number[], n: number): number[] => {
  const c = weights.map(() => 0)
  for (let i = 0; i < n; i++) c[rotationSlot(weights, i)]!++
  return c
}

t.test('each creative gets its weight\'s share of any run of spots', async (t) => {
  for (const weights of [[1, 1], [3, 1], [1, 2, 1], [5, 0.5], [10, 20, 30, 40]]) {
    const total = weights.reduce((a, b) => a + b, 0)
    for (const n of [10, 100, 1000]) {
      const got = counts(weights, n)
      for (const [i, w] of weights.entries()) t.ok(Math.abs(got[i]! - (n * w) / total) <= 2, `${weights.join(':')} over ${n} spots: creative ${i} plays ${got[i]}, its share is ${(n * w) / total}`)
    }
  }
})

t.test('spots interleave rather than play in blocks', async (t) => {
  let longest = 0
  let run = 0
  for (let n = 0; n < 200; n++) {
    run = rotationSlot([1, 1], n) === rotationSlot([1, 1], n - 1) ? run + 1 : 1
    longest = Math.max(longest, run)
  }
  t.ok(longest <= 2, `two equal creatives never play more than twice running (longest run ${longest})`)
  const minor = [...Array(40).keys()].filter((n) => rotationSlot([3, 1], n) === 1)
  t.ok(minor[0]! < 4 && minor.every((n, i) => i === 0 || n - minor[i - 1]! <= 6), `a 3:1 rotation plays the lighter creative every few spots (${minor.join(', ')})`)
})

t.test('one creative plays every spot; a placement without a rotation plays its creative', async (t) => {
  t.same(counts([7], 20), [20])
  t.same(rotationOf({ creative_id: 'cr_a' }), [{ creative_id: 'cr_a', weight: 1 }])
  t.same(rotationOf({ creative_id: 'cr_a', rotation: [{ creative_id: 'cr_b', weight: 2 }] }), [{ creative_id: 'cr_b', weight: 2 }])
})
