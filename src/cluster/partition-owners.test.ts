import t from 'tap'
import { leaseUntil, ownerStep, rendezvousOwner } from './partition-owners.js'

// When a node tries to own a log, hand it over or beat, without an engine: the log decides whether a try counts
// (src/cluster/partition-log.ts); these rules only keep the tries few and the logs spread.

t.test('the logs spread over the nodes, and a node that leaves moves only its own', async (t) => {
  const logs = Array.from({ length: 64 }, (_, p) => `PART_${p}`)
  const three = new Map(logs.map((l) => [l, rendezvousOwner(l, ['node-1', 'node-2', 'node-3'])]))
  const counts = ['node-1', 'node-2', 'node-3'].map((n) => [...three.values()].filter((o) => o === n).length)
  t.ok(counts.every((c) => c >= 12), `each of three nodes owns a share of 64 logs (${counts.join(', ')})`)
  const two = new Map(logs.map((l) => [l, rendezvousOwner(l, ['node-1', 'node-3'])]))
  t.ok(logs.every((l) => three.get(l) === 'node-2' || two.get(l) === three.get(l)), 'node-2 gone: only its logs move')
  t.equal(rendezvousOwner('PART_0', ['node-3', 'node-1', 'node-2']), three.get('PART_0'), 'whatever order the nodes are listed in')
  t.equal(rendezvousOwner('PART_0', []), undefined)
})

t.test('an owner beats, and hands a log over only to a node heard from steadily; others take only what is takeable', async (t) => {
  const base = { owns: false, takeable: false, owner: { node: 'node-2', incarnation: 'b' }, self: 'node-1', should: 'node-1', shouldSettled: true, beatDue: false }
  t.equal(ownerStep({ ...base, owns: true, should: 'node-1', beatDue: true }), 'beat', 'the owner beats when a beat is due')
  t.equal(ownerStep({ ...base, owns: true, should: 'node-1' }), undefined, 'and not before')
  t.equal(ownerStep({ ...base, owns: true, should: 'node-3', shouldSettled: false, beatDue: true }), 'beat', 'a node just heard from is not handed the log yet')
  t.equal(ownerStep({ ...base, owns: true, should: 'node-3', shouldSettled: true }), 'give', 'once heard from steadily, it is')
  t.equal(ownerStep(base), undefined, 'the node the hash names waits while the owner\'s lease runs')
  t.equal(ownerStep({ ...base, takeable: true }), 'take', 'and takes the log once it is takeable')
  t.equal(ownerStep({ ...base, takeable: true, should: 'node-3' }), undefined, 'a node the hash does not name leaves it to that one')
  t.equal(ownerStep({ ...base, takeable: true, should: 'node-3', owner: { node: 'node-1', incarnation: 'old' } }), 'take', 'but a restarted node takes back what its old life owned, at once')
})

t.test('an owner acts as one only within its lease, counted from beats the log has confirmed', async (t) => {
  const lease = { confirmed: undefined as number | undefined, sent: [] as Array<{ at: number, seq: number }> }
  t.equal(leaseUntil(lease, true, 10, 10_000), undefined, 'no beat confirmed yet: no lease')
  lease.sent.push({ at: 1000, seq: 12 })
  t.equal(leaseUntil(lease, true, 11, 10_000), undefined, 'a beat the engine holds but the log has not applied here counts for nothing yet')
  t.equal(leaseUntil(lease, true, 12, 10_000), 6000, 'applied while this node owns the log: the lease, less its margin, from the beat\'s sending')
  lease.sent.push({ at: 3000, seq: 20 })
  t.equal(leaseUntil(lease, true, 15, 10_000), 6000, 'the next beat, not applied yet, leaves the lease as it was')
  t.equal(leaseUntil(lease, true, 25, 10_000), 8000, 'and moves it on once applied')
  lease.sent.push({ at: 5000, seq: 30 })
  t.equal(leaseUntil(lease, false, 31, 10_000), undefined, 'a takeover applied before the beat: the node owns the log no more, and the beat refused counts for nothing')
  t.same(lease, { confirmed: undefined, sent: [] }, 'nothing kept for a later life of its ownership')
})
