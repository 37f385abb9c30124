import { createHash, createPublicKey, verify } from 'node:crypto'
import { spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { ProofSigner } from '../src/proof/signer.js'
import { approvedCreative } from './helpers/creatives.js'
import { eventually } from './helpers/eventually.js'
import { deviceBody, registerDevices, registerPartner } from './helpers/fleet.js'
import { startTestService, type TestService } from './helpers/service.js'

// Proof of play as a buyer checks it: every completed play of a creative gets an Ed25519-signed proof, verified
// here with Node's own crypto (not the library that signed it); each screen's proofs chain by SHA-256; the verify
// endpoint refuses tampered fields; GIVT rules mark impossible timing.

const SPKI_ED25519 = Buffer.from('302a300506032b6570032100', 'hex')

interface Proof { proof_id: string, signature: string, timestamp: number, adId: string, impressionId: string, screenId: string, deviceId: string, chain: { seq: number, prev_digest: string, digest: string }, givt: { passed: boolean, reasons: string[] }, [k: string]: unknown }

const payload = (p: Proof) => `v2.${p.timestamp}.${p.adId}.${p.impressionId}.${p.screenId}.${p.deviceId}`

/** Node's own Ed25519 check of a proof against the published key. */
function nodeVerifies (publicKeyHex: string, p: Proof): boolean {
  const key = createPublicKey({ key: Buffer.concat([SPKI_ED25519, Buffer.from(publicKeyHex, 'hex')]), format: 'der', type: 'spki' })
  return verify(null, Buffer.from(payload(p)), key, Buffer.from(p.signature.replace(/^ed25519=/, ''), 'hex'))
}

/** A screen, an approved seat with a creative, and a way to play one bid spot to completion. */
async function setup (svc: TestService) {
  const p = await registerPartner(svc)
  const [screenId] = Object.values(await registerDevices(svc, p, [deviceBody('proof-1', { slot_duration_seconds: 15 })]))
  const device = (await svc.request('GET', '/v1/partner/devices', { key: p.key })).body.data.devices[0] as { embed_url: string }
  const embed = new URL(device.embed_url).pathname
  const { key } = await svc.onboard('prover')
  await svc.admin('POST', '/admin/v1/seats/prover/approve')
  const creative = await approvedCreative(svc, key, 'proof ad')
  /**
   * Bids, takes the spot, renders and completes it (duration_ms as the player reports it), as the player page does:
   * a 409 spot_in_progress is asked again after its Retry-After. The completion's answer.
   */
  const play = async (t: Test, durationMs = 15_000) => {
    const req = (await svc.request('GET', '/openrtb/v2/adslots?format=openrtb&limit=1', { key })).body.data.bid_requests[0]
    const bid = await svc.request('POST', '/openrtb/v2/bid', { key, body: { id: req.id, seatbid: [{ bid: [{ id: `b-${req.imp[0].id}`, impid: req.imp[0].id, price: 9, crid: creative, adm: '<b>ad</b>' }] }] } })
    t.match(bid, { status: 200, body: { data: { accepted: 1 } } }, 'the bid is stored')
    const asked = (path: string, body: unknown) => eventually(t, `POST ${path} answered`, () => svc.request('POST', path, { body }), { every: 1000, until: (r) => r.status !== 409 })
    const spot = (await asked(`${embed}/spots`, {})).body.data
    t.equal((await asked(`${embed}/spots/${spot.spot_id}/events`, { event: 'render_started' })).status, 200, 'render_started recorded')
    const completed = await asked(`${embed}/spots/${spot.spot_id}/events`, { event: 'play_completed', duration_ms: durationMs })
    t.equal(completed.status, 200, 'play_completed recorded')
    return completed.body.data
  }
  return { key, screenId: screenId!, creative, play, partner: p }
}

t.test('every completed play is signed, verifiable with Node crypto, and chained per screen', async (t) => {
  const svc = await startTestService(t)
  const s = await setup(svc)
  const keyReply = await svc.request('GET', '/v1/advertiser/proof/.well-known/public-key')
  t.match(keyReply, { status: 200, body: { data: { algorithm: 'ed25519', version: 'v2', encoding: 'hex' } } })
  const publicKey = keyReply.body.data.public_key as string
  t.match(publicKey, /^[0-9a-f]{64}$/, '32 bytes, hex')

  const proofs: Proof[] = []
  for (let i = 0; i < 3; i++) {
    const event = await s.play(t)
    t.match(event, { status: 'completed', billed: true, proof_id: /^prf_[0-9a-f]{24}$/ })
    const r = await svc.request('GET', `/v1/advertiser/proof/proofs/${event.proof_id}`, { key: s.key })
    t.equal(r.status, 200)
    proofs.push(r.body.data)
    svc.clock.advance(15_000)
  }
  for (const [i, p] of proofs.entries()) {
    t.match(p, { version: 'v2', adId: s.creative, screenId: s.screenId, deviceId: 'proof-1', verification_tier: 'signed', seat_id: 'prover', duration_ms: 15_000, completed: true, givt: { passed: true, reasons: [] } })
    t.ok(nodeVerifies(publicKey, p), `proof ${i + 1} verifies with Node's crypto`)
    const prev = i === 0 ? '0'.repeat(64) : proofs[i - 1]!.chain.digest
    t.same(p.chain, { seq: i + 1, prev_digest: prev, digest: createHash('sha256').update(`${prev}\n${payload(p)}\n${p.signature}`).digest('hex') }, `proof ${i + 1} chains from the one before`)
  }
  const verified = svc.service.outbox.read('test', 500).filter((e) => e.type === 'impression.verified')
  t.same(verified.map((e) => [e.seat_id, e.data.proof_id, e.data.verification_tier]), proofs.map((p) => ['prover', p.proof_id, 'signed']), 'an impression.verified event per proof, for the seat')
  t.match(verified[0]!.data, { impression_id: proofs[0]!.impressionId, ad_id: s.creative, screen_id: s.screenId, signature: proofs[0]!.signature, givt_passed: true })
  const tampered = { ...proofs[1]!, timestamp: proofs[1]!.timestamp + 1 }
  t.notOk(nodeVerifies(publicKey, tampered), 'a changed timestamp no longer verifies')
  t.not(createHash('sha256').update(`${proofs[0]!.chain.digest}\n${payload(tampered)}\n${tampered.signature}`).digest('hex'), proofs[1]!.chain.digest, 'and no longer matches its link in the chain')

  const list = await svc.request('GET', `/v1/advertiser/proof/proofs?screen_id=${s.screenId}&limit=2`, { key: s.key })
  t.match(list.body.data, { public_key: publicKey, cursor: { has_more: true } })
  t.same(list.body.data.proofs.map((p: Proof) => p.proof_id), proofs.slice(0, 2).map((p) => p.proof_id), 'oldest first')
  const rest = await svc.request('GET', `/v1/advertiser/proof/proofs?screen_id=${s.screenId}&limit=2&cursor=${list.body.data.cursor.next}`, { key: s.key })
  t.same(rest.body.data.proofs.map((p: Proof) => p.proof_id), [proofs[2]!.proof_id])
  t.match(rest.body.data.cursor, { next: null, has_more: false })
  t.equal((await svc.request('GET', '/v1/advertiser/proof/proofs?tier=impression_callback', { key: s.key })).body.data.proofs.length, 0)
  const date = (ms: number) => new Date(ms).toISOString().slice(0, 10)
  t.match((await svc.request('GET', `/openrtb/v2/proof-of-play?start_date=${date(svc.clock.now() - 86_400_000)}&end_date=${date(svc.clock.now())}`, { key: s.key })).body.data, { counts: { total: 3, signed: 3 }, givt: { passed: 3, filtered: 0, pass_rate: 1 } })

  // What an operator's Prometheus sees of it, whichever thread served each play.
  const metrics = (await svc.request('GET', '/metrics')).text
  const total = (name: string) => [...metrics.matchAll(new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)$`, 'gm'))].reduce((n, m) => n + Number(m[1]), 0)
  t.equal(total('oohbid_plays_completed_total'), 3, 'three plays completed')
  t.match(metrics, /^oohbid_proofs_issued_total\{tier="signed"\} 3$/m, 'three signed proofs issued')
  t.match(metrics, /^# TYPE oohbid_analytics_restarts_total counter\noohbid_analytics_restarts_total 0$/m, 'no analytics restart')
  t.match(metrics, /^oohbid_analytics_lag_seconds \d+(\.\d+)?$/m, 'the ClickHouse lag')
})

t.test('verify-proof: valid for a real proof, false for anything tampered or malformed, 400 without the fields', async (t) => {
  const svc = await startTestService(t)
  const s = await setup(svc)
  const event = await s.play(t)
  const p = (await svc.request('GET', `/v1/advertiser/proof/proofs/${event.proof_id}`, { key: s.key })).body.data as Proof
  const fields = { signature: p.signature, timestamp: p.timestamp, adId: p.adId, impressionId: p.impressionId, screenId: p.screenId, deviceId: p.deviceId }
  const check = (body: unknown) => svc.request('POST', '/v1/advertiser/proof/verify-proof', { body })
  t.same((await check(fields)).body, { success: true, verification: { valid: true, version: 'v2' } }, 'no key needed')
  for (const [name, body] of Object.entries({
    timestamp: { ...fields, timestamp: fields.timestamp + 1 },
    adId: { ...fields, adId: 'cr_other' },
    impressionId: { ...fields, impressionId: 'spt_other' },
    screenId: { ...fields, screenId: 'scr_other' },
    deviceId: { ...fields, deviceId: 'other' },
    'signature bit': { ...fields, signature: fields.signature.slice(0, -1) + (fields.signature.endsWith('0') ? '1' : '0') },
    'no prefix': { ...fields, signature: fields.signature.replace('ed25519=', '') },
    'not hex': { ...fields, signature: 'ed25519=' + 'zz'.repeat(64) },
    'short': { ...fields, signature: 'ed25519=abcd' },
    'empty': { ...fields, signature: '' }
  })) {
    const r = await check(body)
    t.match(r, { status: 200, body: { success: true, verification: { valid: false } } }, `${name}: not valid`)
  }
  const { deviceId: _, ...missing } = fields
  t.match(await check(missing), { status: 400, body: { error: { code: 'MISSING_REQUIRED_FIELD' } } })
  t.match(await check({ ...fields, timestamp: 'soon' }), { status: 400 })
  t.match(await svc.request('POST', '/v1/advertiser/proof/verify-proof', { raw: '{"signature":', headers: { 'content-type': 'application/json' } }), { status: 400 })
  t.same((await check(fields)).body.verification, { valid: true, version: 'v2' }, 'still serving')
})

t.test('GIVT: plays longer than the slot, impossibly short, or faster than the slot cadence are flagged', async (t) => {
  const svc = await startTestService(t)
  const s = await setup(svc)
  const givt = async (durationMs: number) => {
    const event = await s.play(t, durationMs)
    return (await svc.request('GET', `/v1/advertiser/proof/proofs/${event.proof_id}`, { key: s.key })).body.data.givt
  }
  t.same(await givt(15_000), { passed: true, reasons: [] }, 'a full 15 s slot')
  svc.clock.advance(15_000)
  t.same(await givt(20_000), { passed: false, reasons: ['longer_than_slot'] }, '20 s in a 15 s slot')
  svc.clock.advance(15_000)
  t.same(await givt(900), { passed: false, reasons: ['too_short'] }, 'under a second')
  svc.clock.advance(3_000)
  t.same(await givt(15_000), { passed: false, reasons: ['burst'] }, 'completed 3 s after the previous play on a 15 s slot')
})

t.test('proofs belong to their seat: another seat gets 404 and an empty list; a bad tier is 400', async (t) => {
  const svc = await startTestService(t)
  const s = await setup(svc)
  const event = await s.play(t)
  const other = await svc.onboard('snoop')
  t.match(await svc.request('GET', `/v1/advertiser/proof/proofs/${event.proof_id}`, { key: other.key }), { status: 404, body: { error: { code: 'PROOF_NOT_FOUND' } } })
  t.equal((await svc.request('GET', '/v1/advertiser/proof/proofs', { key: other.key })).body.data.proofs.length, 0)
  t.match(await svc.request('GET', '/v1/advertiser/proof/proofs?tier=gold', { key: s.key }), { status: 400, body: { error: { code: 'INVALID_VERIFICATION_TIER' } } })
  t.match(await svc.request('GET', '/v1/advertiser/proof/proofs?cursor=nope', { key: s.key }), { status: 400 })
  t.match(await svc.request('GET', '/v1/advertiser/proof/proofs'), { status: 401 })
})

t.test('the signing key is generated once into DATA_DIR/secrets (mode 0600) and kept across restarts', async (t) => {
  const svc = await startTestService(t)
  const first = (await svc.request('GET', '/v1/advertiser/proof/.well-known/public-key')).body.data.public_key
  const path = join(svc.dataDir, 'secrets', 'proof-signing.key')
  t.equal(statSync(path).mode & 0o777, 0o600)
  t.equal(ProofSigner.open(svc.dataDir).publicKeyHex, first, 'opened again: the same key')
})

t.test('impression batches: per-item results, a proof per accepted play, idempotent on impressionId, offline uploads within 72 h', async (t) => {
  const svc = await startTestService(t)
  const s = await setup(svc)
  const p = await registerPartner(svc)
  // Open 09:00-17:00 every day in Austin (UTC-6 in November): a play at 03:00 local is outside its hours.
  const hours = Object.fromEntries(['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'].map((d) => [d, [['09:00', '17:00']]]))
  const ids = await registerDevices(svc, p, [deviceBody('kiosk-1', { slot_duration_seconds: 10, operating_hours: hours })])
  const other = await registerPartner(svc)
  await registerDevices(svc, other, [deviceBody('foreign-1')])
  const local = (h: number, dayOffset = 0) => { const d = new Date(svc.clock.now()); d.setUTCHours(h + 6, 0, 0, 0); return d.getTime() + dayOffset * 86_400_000 }
  svc.clock.set(local(16))
  const item = (over: Record<string, unknown>) => ({ adId: s.creative, deviceId: 'kiosk-1', duration: 10, completed: true, timestamp: local(12), ...over })
  const send = (impressions: unknown[], key = p.key) => svc.request('POST', '/v1/partner/impressions', { key, body: { impressions } })
  const first = await send([
    item({ impressionId: 'imp-1', timestamp: local(12) }),
    item({ impressionId: 'imp-2', timestamp: local(12, -2) }), // uploaded two days late: within 72 h
    item({ impressionId: 'imp-3', timestamp: local(12, -4) }),
    item({ impressionId: 'imp-4', timestamp: svc.clock.now() + 600_000 }),
    item({ impressionId: 'imp-5', deviceId: 'foreign-1' }),
    item({ impressionId: 'imp-6', adId: 'cr_missing' }),
    item({ impressionId: 'imp-7', duration: -1 }),
    { impressionId: 'imp-8' },
    item({ impressionId: 'imp-9', timestamp: local(3) }),
    item({ impressionId: 'imp-10', timestamp: local(12) + 4_000 }),
    item({ impressionId: 'imp-11', timestamp: local(13), duration: 30 }),
    item({ impressionId: 'imp-12', timestamp: local(14), duration: 0.5, completed: true }),
    item({ impressionId: 'imp-1' })
  ])
  t.equal(first.status, 200)
  const r = first.body.data
  t.match(r, { accepted: 6, duplicates: 1, rejected: 6 })
  const by = (i: number) => r.results[i]
  t.match(by(0), { index: 0, impressionId: 'imp-1', status: 'accepted', proof_id: /^prf_/, givt: { passed: true, reasons: [] } })
  t.match(by(1), { status: 'accepted', givt: { passed: true } }, 'an offline play two days old is accepted with its own timestamp')
  t.match(by(2), { status: 'rejected', error: { code: 'INVALID_DATE', param: 'timestamp' } }, 'four days old: outside the 72-hour window')
  t.match(by(3), { status: 'rejected', error: { code: 'INVALID_DATE' } }, 'ten minutes in the future')
  t.match(by(4), { status: 'rejected', error: { code: 'DEVICE_NOT_FOUND' } }, 'another partner\'s device')
  t.match(by(5), { status: 'rejected', error: { code: 'CREATIVE_NOT_FOUND', param: 'adId' } })
  t.match(by(6), { status: 'rejected', impressionId: 'imp-7', error: { code: 'INVALID_PARAMETER' } })
  t.match(by(7), { status: 'rejected', error: { code: 'MISSING_REQUIRED_FIELD' } })
  t.match(by(8), { status: 'accepted', givt: { passed: false, reasons: ['screen_offline'] } }, '03:00 local: the screen is closed')
  t.match(by(9), { status: 'accepted', givt: { passed: false, reasons: ['burst'] } }, '4 s after another play on a 10 s slot')
  t.match(by(10), { status: 'accepted', givt: { passed: false, reasons: ['longer_than_slot'] } })
  t.match(by(11), { status: 'accepted', givt: { passed: false, reasons: ['too_short'] } })
  t.match(by(12), { index: 12, status: 'duplicate', proof_id: by(0).proof_id }, 'the same impressionId later in the batch')

  const publicKey = (await svc.request('GET', '/v1/advertiser/proof/.well-known/public-key')).body.data.public_key
  const proof = (await svc.request('GET', `/v1/advertiser/proof/proofs/${by(1).proof_id}`, { key: s.key })).body.data as Proof
  t.match(proof, { verification_tier: 'impression_callback', impressionId: 'imp-2', deviceId: 'kiosk-1', screenId: ids['kiosk-1'], timestamp: local(12, -2), duration_ms: 10_000, seat_id: 'prover', spot_id: null })
  t.ok(nodeVerifies(publicKey, proof), 'verifies with Node\'s crypto')
  const chain = (await svc.request('GET', `/v1/advertiser/proof/proofs?screen_id=${ids['kiosk-1']}&from=${local(12, -3)}&tier=impression_callback`, { key: s.key })).body.data.proofs as Proof[]
  t.equal(chain.length, 6)
  t.same(chain.map((x) => x.chain.seq).sort((a, b) => a - b), [1, 2, 3, 4, 5, 6], 'one chain per screen, in the order the proofs were recorded')

  const day = (offset: number) => new Date(svc.clock.now() + offset * 86_400_000).toISOString().slice(0, 10)
  const report = (query: string) => svc.request('GET', `/openrtb/v2/proof-of-play?${query}`, { key: s.key })
  const pop = await report(`start_date=${day(-3)}&end_date=${day(0)}&limit=4`)
  t.match(pop, { status: 200, body: { data: { start_date: day(-3), end_date: day(0), counts: { total: 6, signed: 0, event_confirmed: 0, impression_callback: 6 }, givt: { passed: 2, filtered: 4, pass_rate: 0.3333, reasons: { screen_offline: 1, burst: 1, longer_than_slot: 1, too_short: 1, duplicate_impression: 1 } }, cursor: { has_more: true }, public_key: publicKey } } })
  t.equal(pop.body.data.proofs.length, 4)
  t.equal(pop.body.data.proofs[0].impressionId, 'imp-2', 'oldest play first')
  const next = await report(`start_date=${day(-3)}&end_date=${day(0)}&limit=4&cursor=${pop.body.data.cursor.next}`)
  t.equal(next.body.data.proofs.length, 2)
  const signedOnly = (await report(`start_date=${day(-3)}&end_date=${day(0)}&tier=signed`)).body.data
  t.match(signedOnly, { counts: { total: 6 }, proofs: [] }, 'the tier filters the records; the counts cover every tier')
  t.match((await report(`start_date=${day(-1)}&end_date=${day(0)}`)).body.data.counts, { total: 5 }, 'the play two days back is outside a two-day window')
  for (const [query, code] of [
    [`start_date=${day(-3)}&end_date=${day(0)}&tier=gold`, 'invalid_verification_tier'],
    [`start_date=${day(-3)}`, 'missing_required_field'],
    [`end_date=${day(0)}`, 'missing_required_field'],
    [`start_date=${day(0)}&end_date=${day(-3)}`, 'invalid_date'],
    [`start_date=${day(-90)}&end_date=${day(0)}`, 'invalid_date'],
    [`start_date=yesterday&end_date=${day(0)}`, 'invalid_date']
  ] as const) t.match(await report(query), { status: 400, body: { error_code: code } }, query)

  const delivered = svc.service.outbox.read('test', 500).filter((e) => e.type === 'impression.delivered')
  t.same(delivered.map((e) => e.data.impression_id).sort(), ['imp-1', 'imp-10', 'imp-11', 'imp-12', 'imp-2', 'imp-9'], 'impression.delivered once per accepted callback, none for duplicates or refusals')
  t.match(delivered.find((e) => e.data.impression_id === 'imp-2'), { seat_id: 'prover', data: { partner_id: p.id, reconciled: false, verification_tier: 'impression_callback' } })
  const again = await send([item({ impressionId: 'imp-1' }), item({ impressionId: 'imp-2', timestamp: local(12, -2) })])
  t.match(again.body.data, { accepted: 0, duplicates: 2, results: [{ status: 'duplicate', proof_id: by(0).proof_id }, { status: 'duplicate', proof_id: by(1).proof_id }] }, 'a retried batch changes nothing')

  // Another partner reusing this partner's impression id, on its own device or on this partner's, learns nothing of the
  // play and changes nothing: no proof id, no duplicate in the buyer's GIVT report, no reconciliation or event.
  const duplicatesBefore = (await report(`start_date=${day(-3)}&end_date=${day(0)}`)).body.data.givt.reasons.duplicate_impression
  const before = svc.snapshot()
  const foreign = await send([item({ impressionId: 'imp-1', deviceId: 'foreign-1' }), item({ impressionId: 'imp-2', deviceId: 'kiosk-1', timestamp: local(12, -2) })], other.key)
  t.match(foreign.body.data, { accepted: 0, duplicates: 0, rejected: 2 })
  t.match(foreign.body.data.results[0], { index: 0, impressionId: 'imp-1', status: 'rejected', error: { code: 'ALREADY_EXISTS', param: 'impressionId' } }, 'its own device: the id is taken, nothing more')
  t.match(foreign.body.data.results[1], { index: 1, status: 'rejected', error: { code: 'DEVICE_NOT_FOUND', param: 'deviceId' } }, 'this partner\'s device: not its device, before any impression lookup')
  t.notOk(foreign.text.includes(by(0).proof_id) || foreign.text.includes(by(1).proof_id), 'no proof id of another partner\'s play')
  t.same(svc.snapshot(), before, 'nothing written')
  t.equal((await report(`start_date=${day(-3)}&end_date=${day(0)}`)).body.data.givt.reasons.duplicate_impression, duplicatesBefore, 'the buyer\'s GIVT duplicates are unchanged')
  t.match(await send(Array.from({ length: 1001 }, (_, i) => item({ impressionId: `x-${i}` }))), { status: 400 })
  t.match(await send([]), { status: 400 })
  t.match(await send([item({ impressionId: 'imp-99' })], s.key), { status: 403 }, 'a seat key is not a partner key')
})

t.test('a campaign\'s proof export verifies offline with scripts/verify-proofs, and tampering is caught', async (t) => {
  const svc = await startTestService(t)
  const s = await setup(svc)
  const today = new Date(svc.clock.now()).toISOString().slice(0, 10)
  const campaign = await svc.request('POST', '/openrtb/v2/campaigns', { key: s.key, body: { creative_id: s.creative, name: 'Proven', budget_usd: 100, start_date: today, end_date: today } })
  t.equal(campaign.status, 201)
  const rival = await svc.onboard('rival')
  await svc.admin('POST', '/admin/v1/seats/rival/approve')
  const rivalCreative = await approvedCreative(svc, rival.key, 'rival ad')
  const rivalBids = async () => {
    const req = (await svc.request('GET', '/openrtb/v2/adslots?format=openrtb&limit=1', { key: rival.key })).body.data.bid_requests[0]
    const bid = await svc.request('POST', '/openrtb/v2/bid', { key: rival.key, body: { id: req.id, seatbid: [{ bid: [{ id: `r-${req.imp[0].id}`, impid: req.imp[0].id, price: 20, crid: rivalCreative, adm: '<b>r</b>' }] }] } })
    t.match(bid, { status: 200, body: { data: { accepted: 1 } } }, 'the rival\'s bid is stored')
  }
  for (let i = 0; i < 5; i++) {
    if (i % 2 === 1) await rivalBids()
    await s.play(t)
    svc.clock.advance(15_000)
  }
  const r = await svc.request('GET', `/openrtb/v2/campaigns/${campaign.body.data.campaign_id}/proofs`, { key: s.key })
  t.equal(r.status, 200)
  const exp = r.body.data
  t.match(exp, { creative_id: s.creative, seat_id: 'prover', proofs: 3, algorithm: 'ed25519' })
  t.equal(exp.screens.length, 1)
  t.same(exp.screens[0].chain.map((l: { redacted?: boolean, chain?: { seq: number }, seq?: number }) => [l.redacted === true ? 'other' : 'own', l.redacted === true ? l.seq : l.chain!.seq]), [['own', 1], ['other', 2], ['own', 3], ['other', 4], ['own', 5]], 'the rival\'s plays appear only as redacted links')
  t.notOk(JSON.stringify(exp).includes(rivalCreative), 'nothing of the rival\'s proofs is revealed')

  const dir = mkdtempSync(join(tmpdir(), 'oohbid-export-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const check = (doc: unknown, ...args: string[]) => {
    const file = join(dir, `export-${Math.random().toString(36).slice(2)}.json`)
    writeFileSync(file, JSON.stringify(doc))
    return spawnSync(process.execPath, ['dist/scripts/verify-proofs.js', file, ...args], { encoding: 'utf8' })
  }
  const good = check(r.body, '--key', exp.public_key)
  t.equal(good.status, 0, good.stdout)
  t.match(good.stdout, /^OK: campaign .+, 3 proofs on 1 screens/m)
  const clone = () => JSON.parse(JSON.stringify(exp))
  const dropped = clone()
  dropped.screens[0].chain.splice(2, 1)
  t.match(check(dropped), { status: 1, stdout: /link 4 follows 2/ }, 'a dropped proof leaves a gap')
  const altered = clone()
  altered.screens[0].chain[2].timestamp += 1000
  t.match(check(altered), { status: 1, stdout: /signature does not verify[\s\S]*chain digest does not match/ }, 'an altered proof no longer verifies')
  const forged = clone()
  forged.screens[0].chain[1].digest = 'f'.repeat(64)
  t.match(check(forged), { status: 1, stdout: /link 3 does not chain from link 2/ }, 'a changed link breaks the chain')
  t.match(check(exp, '--key', 'a'.repeat(64)), { status: 1, stdout: /is not the pinned/ }, 'a key other than the pinned one is refused')
  const other = await svc.request('GET', `/openrtb/v2/campaigns/${campaign.body.data.campaign_id}/proofs`, { key: rival.key })
  t.match(other, { status: 404, body: { error_code: 'campaign_not_found' } })
})

t.test('a partner\'s callback for a play the player already proved reconciles once: impression.delivered, reconciled', async (t) => {
  const svc = await startTestService(t)
  const s = await setup(svc)
  const event = await s.play(t)
  const proof = (await svc.request('GET', `/v1/advertiser/proof/proofs/${event.proof_id}`, { key: s.key })).body.data as Proof
  const callback = { adId: s.creative, impressionId: proof.impressionId, deviceId: 'proof-1', duration: 15, completed: true, timestamp: proof.timestamp }
  const send = () => svc.request('POST', '/v1/partner/impressions', { key: s.partner.key, body: { impressions: [callback] } })
  t.match((await send()).body.data, { accepted: 0, duplicates: 1, results: [{ status: 'duplicate', proof_id: proof.proof_id }] }, 'no second proof')
  t.match((await send()).body.data, { duplicates: 1 })
  const delivered = svc.service.outbox.read('test', 500).filter((e) => e.type === 'impression.delivered')
  t.equal(delivered.length, 1, 'announced once, however often the partner reports it')
  t.match(delivered[0], { seat_id: 'prover', data: { proof_id: proof.proof_id, reconciled: true, partner_id: s.partner.id, partner_impressions_today: 1, verification_tier: 'signed' } })
  const date = (ms: number) => new Date(ms).toISOString().slice(0, 10)
  const pop = (await svc.request('GET', `/openrtb/v2/proof-of-play?start_date=${date(proof.timestamp)}&end_date=${date(proof.timestamp)}`, { key: s.key })).body.data
  t.match(pop, { counts: { total: 1, signed: 1 }, givt: { passed: 1, pass_rate: 1, reasons: { duplicate_impression: 1 } } }, 'the repeat after reconciliation is a filtered duplicate; the play itself still passes')
})
