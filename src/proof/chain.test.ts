import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { systemClock } from '../clock.js'
import { FunnelLog } from '../events/funnel.js'
import { Outbox } from '../store/outbox.js'
import { openStore } from '../store/store.js'
import { chainDigest, GENESIS, placeProof, repeatHere, type PlacedAt, type ProofEffects } from './chain.js'
import { judged } from './givt.js'
import type { ProofCommand, SignedFields } from './records.js'

// The placement rule without a service: a screen's chain grows one place at a time in the order plays are placed, an
// impression id proves once, a cluster's nodes placing the same entries in the same order hold the same rows, and only
// the node that proposed a play announces it.

const DAY = 86_400_000
const T0 = Math.floor(Date.now() / DAY) * DAY + 3_600_000
const ALONE: PlacedAt = { logTime: T0 + DAY / 2, mine: true, log: false }

function effects (t: { teardown (fn: () => unknown): void }): ProofEffects {
  const dir = mkdtempSync(join(tmpdir(), 'oohbid-chain-'))
  const store = openStore(dir)
  t.teardown(async () => { await store.close(); rmSync(dir, { recursive: true, force: true }) })
  return { store, outbox: new Outbox(store, systemClock), funnel: new FunnelLog(store) }
}

let minutes = 0
/** A signed play of seat-a's ad on s1, a minute after the one before unless said. */
function play (impressionId: string, over: Partial<ProofCommand> = {}, fields: Partial<SignedFields> = {}): ProofCommand {
  return {
    proof_id: `prf_${impressionId}_${minutes}`,
    fields: { timestamp: T0 + ++minutes * 60_000, adId: 'cr_1', impressionId, screenId: 's1', deviceId: 'd1', ...fields },
    signature: `ed25519=${impressionId}`,
    facts: { verification_tier: 'signed', seat_id: 'seat-a', creative_id: 'cr_1', spot_id: impressionId, duration_ms: 15_000, completed: true },
    slot_seconds: 15,
    reported: [],
    ...over
  }
}

const place = (e: ProofEffects, c: ProofCommand, at: PlacedAt) => e.store.write(() => placeProof(e, c, at))
const announced = (e: ProofEffects) => [...e.store.outbox.getRange()].map(({ value }) => `${value.type}${value.data.reconciled === true ? ' reconciled' : ''}`)
const dayRow = (e: ProofEffects, row: string) => e.store.proofDays.get(['seat-a', Math.floor(T0 / DAY) * DAY, row])

t.test('a node alone chains a screen\'s plays in the order placed, proves an impression id once, and refuses it on another screen or past the offline window', async (t) => {
  const e = effects(t)
  const a = play('a')
  const b = play('b')
  t.match(place(e, a, ALONE), { status: 'accepted', proof_id: a.proof_id, givt: { passed: true, reasons: [] } })
  t.match(place(e, b, ALONE), { status: 'accepted', proof_id: b.proof_id })
  const first = e.store.proofs.get(a.proof_id)!
  const second = e.store.proofs.get(b.proof_id)!
  t.same(first.chain, { seq: 1, prev_digest: GENESIS, digest: chainDigest(GENESIS, a.fields, a.signature) }, 'the first place chains from the genesis digest')
  t.same(second.chain, { seq: 2, prev_digest: first.chain.digest, digest: chainDigest(first.chain.digest, b.fields, b.signature) }, 'the next from the one before')
  t.equal(first.recorded_at, new Date(ALONE.logTime).toISOString(), 'recorded at the time it was placed')
  t.same(e.store.proofHeads.get('s1'), { seq: 2, digest: second.chain.digest }, 'a node alone\'s head, not a log\'s')
  t.same(place(e, play('a'), ALONE), { status: 'duplicate', proof_id: a.proof_id }, 'an impression id proves once')
  t.same(place(e, play('a', {}, { screenId: 's2' }), ALONE), { status: 'taken' }, 'and not on another screen')
  t.same(place(e, play('old', {}, { timestamp: ALONE.logTime - 73 * 3_600_000 }), ALONE), { status: 'too_old' }, 'a play older than 72 hours is refused')
  t.same(announced(e), ['impression.verified', 'impression.verified'], 'each proof announced once')
  t.match(dayRow(e, ''), { tiers: { signed: 2 }, passed: 2 }, 'counted in the node\'s own day row')
})

t.test('a log\'s apply: every node places the same entries alike, the first place of a screen from the entry\'s base, and only the proposer announces', async (t) => {
  const proposer = effects(t)
  const other = effects(t)
  // Heads the nodes held before the log: they differ (the fork the log mends), and neither is used.
  proposer.store.write(() => proposer.store.proofHeads.putSync('s1', { seq: 5, digest: 'f'.repeat(64) }))
  const entries = [play('x', { base: { seq: 7, digest: 'b'.repeat(64) } }), play('y', { base: { seq: 1, digest: GENESIS } }), play('x'), play('z', {}, { screenId: 's2' })]
  const verdicts = entries.map((c) => [place(proposer, c, { logTime: T0 + DAY / 2, mine: true, log: true }), place(other, c, { logTime: T0 + DAY / 2, mine: false, log: true })])
  t.same(verdicts.map(([p, o]) => JSON.stringify(p) === JSON.stringify(o)), [true, true, true, true], 'the same verdicts on both nodes')
  t.same(verdicts.map(([p]) => p!.status), ['accepted', 'accepted', 'duplicate', 'accepted'])
  const x = proposer.store.proofs.get(entries[0]!.proof_id)!
  const y = proposer.store.proofs.get(entries[1]!.proof_id)!
  t.same([x.chain.seq, x.chain.prev_digest], [8, 'b'.repeat(64)], 'the screen\'s first place in the log chains from the entry\'s base')
  t.same([y.chain.seq, y.chain.prev_digest], [9, x.chain.digest], 'the next from the log\'s head, whatever its entry\'s base says')
  t.equal(proposer.store.proofs.get(entries[3]!.proof_id)!.chain.seq, 1, 'a screen with no base starts the chain')
  for (const c of [entries[0]!, entries[1]!, entries[3]!]) t.same(other.store.proofs.get(c.proof_id), proposer.store.proofs.get(c.proof_id), `${c.fields.impressionId}: the same row on both nodes`)
  t.same(other.store.proofHeads.get('s1'), { seq: 9, digest: y.chain.digest, log: true })
  t.same(announced(proposer), ['impression.verified', 'impression.verified', 'impression.verified'], 'the proposer announces what it placed')
  t.same(announced(other), [], 'the other node announces nothing')
  t.same(dayRow(other, '*'), dayRow(proposer, '*'), 'both count the plays in the log\'s row, alike')
  t.match(dayRow(proposer, '*'), { tiers: { signed: 3 } }, 'three proofs placed')
  t.equal(dayRow(proposer, ''), undefined, 'and in no node\'s own row')
})

t.test('repeats: a partner\'s callback and the service\'s own play reconcile once, in either order, and other repeats count as duplicates', async (t) => {
  const e = effects(t)
  const at: PlacedAt = { logTime: T0 + DAY / 2, mine: true, log: true }
  const served = play('p')
  const callback = (id: string) => play(id, { partner_id: 'prt_1', facts: { ...served.facts, verification_tier: 'impression_callback', spot_id: null } })
  place(e, served, at)
  t.same(place(e, callback('p'), at), { status: 'duplicate', proof_id: served.proof_id }, 'a partner\'s callback for a play the service proved: no second proof')
  t.same(place(e, callback('p'), at), { status: 'duplicate', proof_id: served.proof_id })
  const first = callback('q')
  t.match(place(e, first, at), { status: 'accepted' }, 'a callback for a play the service has not seen proves it')
  t.same(place(e, play('q'), at), { status: 'duplicate', proof_id: first.proof_id }, 'and the service\'s play of it then is a repeat naming that proof')
  t.same(announced(e), ['impression.verified', 'impression.delivered reconciled', 'impression.delivered', 'impression.verified'], 'each side reconciled once, in either order')
  t.equal(dayRow(e, '*')!.reasons.duplicate_impression, 1, 'the second callback of p counted a duplicate impression')
  t.equal(e.store.meta.get('partner-impressions:prt_1:' + new Date(T0).toISOString().slice(0, 10)), 2, 'the partner\'s impressions of the day: the reconciled one and q')

  t.same(repeatHere(e, callback('q')), { status: 'duplicate', proof_id: first.proof_id }, 'a cluster node answers a callback repeated with nothing to reconcile itself')
  t.equal(dayRow(e, '')!.reasons.duplicate_impression, 1, 'counted in its own day row')
  t.equal(repeatHere(e, callback('new')), undefined, 'a play not placed goes to the log')
  const unreconciled = play('r')
  place(e, unreconciled, at)
  t.equal(repeatHere(e, callback('r')), undefined, 'and so does a repeat that reconciles')
  t.same(repeatHere(e, callback('p')), { status: 'duplicate', proof_id: served.proof_id })
})

t.test('GIVT: the rules judged where a play was reported, and the burst judged from the plays placed before it', async (t) => {
  const e = effects(t)
  const at: PlacedAt = { logTime: T0 + DAY / 2, mine: true, log: true }
  const first = play('g1', { reported: ['longer_than_slot', 'screen_offline'] })
  t.same(place(e, first, at), { status: 'accepted', proof_id: first.proof_id, givt: { passed: false, reasons: ['longer_than_slot', 'screen_offline'] } })
  const near = play('g2', { reported: ['screen_offline'] }, { timestamp: first.fields.timestamp + 5000 })
  t.match(place(e, near, at), { givt: { passed: false, reasons: ['burst', 'screen_offline'] } }, 'a play five seconds after another on a 15 s slot is a burst, in the rules\' order')
  t.same(judged(e.store, 's1', { timestamp: first.fields.timestamp + 30_000, slotSeconds: 15 }, []), { passed: true, reasons: [] }, 'two slots away is not')
})
