import t from 'tap'
import { clusterAvailable, everyNode, gymScreens, startTestCluster, uploadedAd } from './helpers/cluster.js'
import { eventually } from './helpers/eventually.js'

// The engine's members lost (test/helpers/cluster.ts starts the cluster): its leader killed, then a second member, so
// that it has no quorum; writes refused without one are not acknowledged, and ship or run once it is back, and a play
// refused without one is proven once it is back.

if (clusterAvailable(t)) {
  const c = await startTestCluster(t)
  const { cluster, call, onboard, seatStatus } = c

  t.test('the engine\'s leader lost: writes go on with two members of three; with one, a write answers 503 and ships once the engine is back', async (t) => {
    const [one, two] = c.nodes
    // A screen operator whose device reports a play while the engine has no quorum, and the ad it played.
    const screens = await gymScreens(t, c)
    const ad = await uploadedAd(t, c)
    const leader = await cluster.engine.leaderOf('KV_oohbid_state')
    process.kill(leader.pid, 'SIGKILL')
    const killed = performance.now()
    let seatId = ''
    let tries = 0
    // An election here took 4.6-7.8 s on a quiet machine and more than 20 s on a busy CI one: a candidate whose vote
    // splits waits out another 4-9 s timeout, and each try waits for the names' log's leader for up to 5 s.
    const first = await eventually(t, 'an onboarding acknowledged with two members of three', async () => {
      seatId = `after-leader-loss-${tries++}`
      return await onboard(cluster.frontUrl, seatId)
    }, { within: 45_000, every: 0, until: (r) => r.status === 201 })
    t.equal(first.status, 201, `onboarding acknowledged again with two members of three (after ${tries} tries)`)
    t.comment(`the state bucket's leader (${leader.name}) killed: the first write acknowledged ${((performance.now() - killed) / 1000).toFixed(1)} s later (a RAFT election)`)
    const key = first.body.data.api_key.key as string
    // The polls below may last while the engine recovers, past the account group's 100 calls a minute. The seat's
    // lock (the names' log) may still be electing its leader: 503 with Retry-After until it has (more than 30 s in a
    // loaded full run).
    const raised = await eventually(t, 'the seat\'s account limit raised', async () => {
      const res = await c.admin(one.url, 'PUT', `/admin/v1/seats/${seatId}/rate-limits`, { limits: { account: 100000 }, reason: 'cluster test polls its keys' })
      return { status: res.status, error: res.body.error as string | undefined }
    }, { within: 60_000, every: 1000, until: (r) => r.status === 200 })
    t.equal(raised?.status, 200, 'the seat\'s account limit raised once the engine answers')
    // A node's watch of the bucket follows the new leader once its consumer misses the old one's heartbeats.
    t.not(await everyNode(t, c, [one], key, 200, 20_000, 250), undefined, 'node-1 has the seat onboarded after the election')

    const second = cluster.engine.members().find((m) => m.name !== leader.name)!
    process.kill(second.pid, 'SIGKILL')
    const waiting = async () => (await call(one.url, 'GET', '/readyz')).body.data.checks.cluster as string
    const caller = { 'x-forwarded-for': '203.0.113.78' }
    const unclaimed = await onboard(one.url, 'no-quorum', caller)
    t.match(unclaimed, { status: 503, body: { error_code: 'service_unavailable' } }, 'without a quorum a seat_id cannot be claimed: onboarding is refused')
    const headers = { 'idempotency-key': 'no-quorum-mint' }
    const unclaimedKey = await call(one.url, 'POST', '/openrtb/v2/keys', { key, body: { label: 'claimed-without-quorum' }, headers })
    t.match(unclaimedKey, { status: 503, body: { error_code: 'service_unavailable' } }, 'a write with an Idempotency-Key is refused before it runs: the key cannot be claimed cluster-wide')
    const refused = await call(one.url, 'POST', '/openrtb/v2/keys', { key, body: { label: 'minted-without-quorum' } })
    t.match(refused, { status: 503, body: { error_code: 'service_unavailable' } }, 'a key minted without a quorum (no Idempotency-Key) is not acknowledged')
    t.equal(refused.headers.get('retry-after'), '1')
    const play = { adId: ad.id, impressionId: 'played-without-quorum', deviceId: 'd-5', duration: 15, completed: true, timestamp: Date.now() - 1000 }
    const unplaced = await call(one.url, 'POST', '/v1/partner/impressions', { key: screens.partner, body: { impressions: [play] } })
    t.match(unplaced, { status: 503, body: { error: { code: 'SERVICE_UNAVAILABLE' } } }, 'a play reported without a quorum is not acknowledged: the proof log cannot place it')
    t.match(await waiting(), /^node-1: [1-9]\d* transactions waiting to ship/, '/readyz says the write waits to ship')
    t.equal(await seatStatus(one.url, key), 200, 'the node goes on answering')

    await cluster.engine.restart(leader.name)
    await cluster.engine.restart(second.name)
    const back = performance.now()
    t.match(await eventually(t, 'node-1 has shipped what waited', waiting, { within: 30_000, every: 100, until: (w) => /: 0 transactions waiting/.test(w) }), /^node-1: 0 transactions waiting to ship to the engine; replicated state applied through revision \d+$/, 'the write ships once the engine has a quorum again')
    const labels = async (base: string) => ((await call(base, 'GET', '/openrtb/v2/keys', { key })).body.data?.keys ?? []).map((k: { label?: string }) => k.label)
    const listed = await eventually(t, 'every node lists the key minted without a quorum', () => Promise.all(cluster.nodes.map((n) => labels(n.url))), { within: 20_000, every: 250, until: (all) => all.every((l: unknown[]) => l.includes('minted-without-quorum')) })
    t.ok(listed.every((l: unknown[]) => l.includes('minted-without-quorum')), 'the key minted while the engine had no quorum reaches every node')
    t.comment(`on every node ${(((performance.now() - back) / 1000)).toFixed(1)} s after the engine's members were started again`)
    const screenId = screens.devices.find((d) => d.device_id === play.deviceId)!.screen_id
    const provenOn = async (base: string): Promise<string[]> => ((await call(base, 'GET', `/v1/advertiser/proof/proofs?screen_id=${screenId}&limit=100`, { key: ad.key })).body.data?.proofs as Array<{ proof_id: string, impressionId: string }> ?? []).filter((p) => p.impressionId === play.impressionId).map((p) => p.proof_id)
    // Its partner does not send it again: node-1 proposes it again itself once the engine can place it.
    const proven = await eventually(t, 'the play refused without a quorum proven on every node', () => Promise.all(cluster.nodes.map((n) => provenOn(n.url))), { within: 60_000, every: 500, until: (all) => all.every((ids) => ids.length === 1 && ids[0] === all[0]![0]) })
    t.ok(proven.every((ids) => ids.length === 1 && ids[0] === proven[0]![0]), 'the play refused without a quorum is proven once the engine is back, once, the same proof on every node, with no retry from its partner')
    const resent = await call(two.url, 'POST', '/v1/partner/impressions', { key: screens.partner, body: { impressions: [play] } })
    t.match(resent, { status: 200, body: { data: { accepted: 0, duplicates: 1, results: [{ status: 'duplicate', proof_id: proven[0]![0] }] } } }, 'and its partner sending it again through node-2 gets a duplicate naming that proof')
    // As its Retry-After says: the names' log may still be electing its leader (each of the engine's streams elects
    // its own after the restarts; on a busy machine an election has taken more than 10 s).
    const ran = await eventually(t, 'the refused Idempotency-Key request run on a retry', () => call(one.url, 'POST', '/openrtb/v2/keys', { key, body: { label: 'claimed-without-quorum' }, headers }), { within: 30_000, every: 1000, until: (r) => r.status !== 503 })
    t.equal(ran.status, 201, 'the refused Idempotency-Key request, retried, runs')
    t.equal(ran.headers.get('idempotent-replayed'), null, 'for the first time: the refusal wrote nothing to replay')
    // node-2 asks the names' log too, whose leader it may still be looking for: it retries on 503 as its Retry-After says.
    const elsewhere = await eventually(t, 'its retry through node-2 answered', () => call(two.url, 'POST', '/openrtb/v2/keys', { key, body: { label: 'claimed-without-quorum' }, headers }), { within: 30_000, every: 1000, until: (r) => r.status !== 503 })
    t.equal(elsewhere.status, 201, 'and its retry through another node replays')
    t.equal(elsewhere.headers.get('idempotent-replayed'), 'true')
    t.equal(elsewhere.body.data.key, ran.body.data.key, 'with the same key')
    t.equal((await labels(two.url)).filter((l: string) => l === 'claimed-without-quorum').length, 1, 'and the seat has that key once')
    // The same for onboarding (each try counts against the address's 5 onboardings an hour).
    const retried = await eventually(t, 'the onboarding refused without a quorum run on a retry', () => onboard(one.url, 'no-quorum', caller), { within: 10_000, every: 1000, tries: 4, until: (r) => r.status !== 503 })
    t.equal(retried.status, 201, 'and the onboarding refused without a quorum succeeds when its caller retries it')
  })
}
