import { createHash } from 'node:crypto'
import t from 'tap'
import { signRequest } from '../src/auth/hmac.js'
import { adImage } from './helpers/media.js'
import { approveCreative, approvedBidder, approvedEverywhere, assetOn, clusterAvailable, gymDevice, gymScreens, PARTITIONS, startTestCluster, untilServed } from './helpers/cluster.js'
import { eventually, pause } from './helpers/eventually.js'
import { startReceiver } from './helpers/receiver.js'
import { freshIp } from './helpers/service.js'
import { partitionOf } from '../src/cluster/screen-partitions.js'

// The marketplace on a cluster (test/helpers/cluster.ts starts it): creatives and their bytes, bookings never sold
// twice, a screen's player, its proof chain through every node at once, an exchange's notices, a bid taken through one node and
// won on its screen's owner, and the whole loop through the front. The screens are test/cluster.test.ts's, registered here as a fixture.

if (clusterAvailable(t)) {
  const c = await startTestCluster(t)
  const { cluster, call, onboard } = c
  /** The operator whose 31 screens (d-0 to d-30) the tests play on. */
  let screensPartner = ''
  /** The creative test's ad, which the tests after it book and play. */
  let everywhereAd: { id: string, bytes: Buffer, key: string } | undefined

  t.test('the setting: an operator\'s 31 screens, listed with partner inventory on', async (t) => {
    screensPartner = (await gymScreens(t, c)).partner
    t.equal((await c.admin(c.nodes[1].url, 'PUT', '/admin/v1/settings', { partner_display: true })).status, 200, 'partner display on')
    for (const node of c.nodes) await eventually(t, `${node.id} has partner display on`, async () => (await c.admin(node.url, 'GET', '/admin/v1/settings')).body.data.partner_display as boolean, { until: (on) => on })
  })

  t.test('a play naming a device and an ad made through node-1 a moment before, reported at once through the others: each node catches up and proves it', async (t) => {
    const registered = await call(cluster.frontUrl, 'POST', '/v1/partner/register', { body: { name: 'Fresh Screens', slug: 'fresh-screens', contact_email: 'ops@fresh.example', partner_type: 'screen_operator', domain: 'fresh.example' }, headers: { 'x-forwarded-for': freshIp() } })
    t.equal(registered.status, 201, 'a second operator registered')
    const partner = registered.body.data.api_key.key as string
    const buyer = (await onboard(cluster.frontUrl, 'fresh-ads')).body.data.api_key.key as string
    t.equal((await c.admin(c.nodes[0].url, 'PUT', '/admin/v1/seats/fresh-ads/rate-limits', { limits: { creatives: 100000 }, reason: 'cluster test' })).status, 200)
    const [one, ...others] = c.nodes
    for (let i = 0; i < 6; i++) {
      t.equal((await call(one.url, 'POST', '/v1/partner/devices/batch', { key: partner, body: { devices: [gymDevice(`fresh-${i}`)] } })).status, 200, `device fresh-${i} registered through node-1`)
      const created = await call(one.url, 'POST', '/openrtb/v2/creatives', { key: buyer, body: { name: `Fresh ad ${i}`, content_type: 'image/png', mode: 'upload' } })
      t.equal(created.status, 201, `ad ${i} made through node-1`)
      const node = others[i % others.length]!
      const play = { adId: created.body.data.creative_id as string, impressionId: `fresh-imp-${i}`, deviceId: `fresh-${i}`, duration: 15, completed: true, timestamp: Date.now() - 1000 }
      const played = await call(node.url, 'POST', '/v1/partner/impressions', { key: partner, body: { impressions: [play] } })
      t.match(played, { status: 200, body: { data: { accepted: 1, results: [{ status: 'accepted' }] } } }, `its play reported at once through ${node.id}: accepted, not refused as unknown`)
    }
    const long = { adId: 'x'.repeat(3000), impressionId: 'y'.repeat(3000), deviceId: 'z'.repeat(3000), duration: 15, completed: true, timestamp: Date.now() - 1000 }
    const refused = await call(others[0]!.url, 'POST', '/v1/partner/impressions', { key: partner, body: { impressions: [long] } })
    t.match(refused, { status: 200, body: { data: { accepted: 0, results: [{ status: 'rejected', error: { code: 'INVALID_PARAMETER' } }] } } }, 'ids past the schema\'s lengths (and LMDB\'s keys): that item refused as invalid, not a 500')
    t.equal((await call(others[0]!.url, 'GET', '/v1/partner/devices?limit=1', { key: partner })).status, 200, 'the node goes on serving')
  })

  t.test('a creative registered, uploaded and confirmed through three different nodes is moderated and served by every node', async (t) => {
    const [one, two, three] = c.nodes
    const made = await onboard(cluster.frontUrl, 'creative-buyer')
    const key = made.body.data.api_key.key as string
    // Room for the polling below on a busy machine, where moderation can take seconds.
    t.equal((await call(one.url, 'PUT', '/admin/v1/seats/creative-buyer/rate-limits', { key: cluster.adminToken, body: { limits: { creatives: 100000, inventory: 100000, account: 100000, reporting: 100000 }, reason: 'cluster test polls every node' } })).status, 200)
    // Subscribed through node-1; the event is raised by node-3, which moderates, and delivered from there.
    const receiver = await startReceiver(t, true)
    const subscribed = await call(one.url, 'POST', '/openrtb/v2/webhooks', { key, body: { url: `${receiver.url}/hooks`, events: ['creative.moderation.completed'] } })
    t.equal(subscribed.status, 201, 'a webhook subscribed through node-1')
    const created = await call(one.url, 'POST', '/openrtb/v2/creatives', { key, body: { name: 'Everywhere ad', content_type: 'image/png', mode: 'upload' } })
    t.equal(created.status, 201, 'registered through node-1')
    const id = created.body.data.creative_id as string
    const bytes = await adImage('EVERYWHERE', 'Three nodes, one ad')
    everywhereAd = { id, bytes, key }
    const sha256 = createHash('sha256').update(bytes).digest('hex')
    const uploadPath = new URL(created.body.data.upload.url as string).pathname
    const put = await fetch(two.url + uploadPath, { method: 'PUT', headers: { 'content-type': 'image/png' }, body: bytes })
    t.equal(put.status, 200, 'its bytes uploaded through node-2, with the upload URL node-1 signed')
    const confirmed = await call(three.url, 'POST', `/openrtb/v2/creatives/${id}/confirm`, { key })
    t.equal(confirmed.status, 200, 'confirmed through node-3, which moderates bytes it fetches from the engine')
    const statusOn = async (base: string) => (await call(base, 'GET', `/openrtb/v2/creatives/${id}`, { key })).body.data?.status as string | undefined
    const statuses = await eventually(t, 'the creative moderated, and every node showing the outcome', () => Promise.all(cluster.nodes.map((n) => statusOn(n.url))), { within: 30_000, every: 100, until: (all) => all.every((x) => x !== undefined && x !== 'pending_moderation' && x === all[0]) })
    t.ok(statuses[0] !== 'pending_moderation' && statuses.every((x) => x === statuses[0]), `moderated, and every node shows the outcome: ${statuses.join(', ')}`)
    if (statuses[0] !== 'approved') {
      const review = await call(one.url, 'POST', `/admin/v1/creatives/${id}/review`, { key: cluster.adminToken, body: { decision: 'approved', reason: 'cluster test' } })
      t.equal(review.status, 200, `approved on review through node-1 (moderation said ${statuses[0]})`)
    }
    for (const node of cluster.nodes) t.equal(createHash('sha256').update(await assetOn(t, node.url, id)).digest('hex'), sha256, `${node.id} serves the uploaded bytes`)
    const event = await eventually(t, 'the moderation event at the receiver', () => receiver.received.find((r) => r.headers['x-service-event'] === 'creative.moderation.completed' && r.body.includes(id)), { every: 100 })
    t.equal(event?.headers['x-service-webhook-id'], subscribed.body.data.webhook.webhook_id, 'the moderation event reached the subscription made through another node')
    // The delivery's log entry, written by the node that raised the event as it attempted it, is listed by every node.
    const deliveriesOn = async (base: string) => ((await call(base, 'GET', '/openrtb/v2/webhooks/deliveries?event=creative.moderation.completed', { key })).body.data.deliveries as Array<{ delivery_id: string, status: string }>).map((d) => `${d.delivery_id} ${d.status}`)
    const logs = await eventually(t, 'every node\'s delivery log shows the one delivery, succeeded', () => Promise.all(cluster.nodes.map((n) => deliveriesOn(n.url))), { every: 50, until: (all) => all.every((l) => l.length === 1 && l[0]!.endsWith(' succeeded') && l[0] === all[0]![0]) })
    t.same(logs, cluster.nodes.map(() => [logs[0]![0]]), `every node's delivery log shows the one delivery, succeeded: ${logs[0]?.[0] ?? 'none'}`)
    t.ok(logs[0]![0]!.endsWith(' succeeded'))
    const hooks = async (base: string) => (await call(base, 'GET', '/openrtb/v2/webhooks', { key })).body.data.webhooks.map((w: { webhook_id: string }) => w.webhook_id)
    t.same(await hooks(two.url), [subscribed.body.data.webhook.webhook_id], 'node-2 lists the subscription')
    t.equal((await call(two.url, 'DELETE', `/openrtb/v2/webhooks/${subscribed.body.data.webhook.webhook_id as string}`, { key })).status, 200, 'and removes it')
    const left = await eventually(t, 'node-3 lists the subscription no more', () => hooks(three.url), { every: 50, until: (l) => l.length === 0 })
    t.same(left, [], 'node-3 lists it no more')
    const listed = await Promise.all(cluster.nodes.map(async (n) => (await call(n.url, 'GET', '/openrtb/v2/creatives', { key })).body.data.creatives.map((c: { creative_id: string }) => c.creative_id)))
    t.same(listed, [[id], [id], [id]], 'every node lists it among the seat\'s creatives')
    t.match(await call(two.url, 'POST', `/openrtb/v2/creatives/${id}/confirm`, { key }), { status: 409, body: { error_code: 'invalid_transition' } }, 'confirmed again through another node: 409, as on one node')
    const again = await fetch(one.url + uploadPath, { method: 'PUT', headers: { 'content-type': 'image/png' }, body: Buffer.from('not a png') })
    t.equal(again.status, 409, 'its upload is closed on every node')
    t.equal(createHash('sha256').update(Buffer.from(await (await fetch(`${three.url}/assets/${id}`)).arrayBuffer())).digest('hex'), sha256, 'nothing written: node-3 still serves the moderated bytes')

    // A play of it reported through node-1: its proof, signed there, verifies on every node against one public key.
    const played = await call(one.url, 'POST', '/v1/partner/impressions', { key: screensPartner, body: { impressions: [{ adId: id, impressionId: 'cluster-imp-1', deviceId: 'd-3', duration: 15, completed: true, timestamp: Date.now() - 1000 }] } })
    t.match(played, { status: 200, body: { data: { accepted: 1 } } }, 'a play reported through node-1')
    const proof = (await call(one.url, 'GET', `/v1/advertiser/proof/proofs/${played.body.data.results[0].proof_id as string}`, { key })).body.data
    const keys = await Promise.all(cluster.nodes.map(async (n) => (await call(n.url, 'GET', '/v1/advertiser/proof/.well-known/public-key', { headers: { 'x-forwarded-for': freshIp() } })).body))
    t.ok(keys.every((k) => JSON.stringify(k) === JSON.stringify(keys[0])), 'every node publishes the same proof-signing public key')
    const fields = { signature: proof.signature, timestamp: proof.timestamp, adId: proof.adId, impressionId: proof.impressionId, screenId: proof.screenId, deviceId: proof.deviceId }
    for (const node of cluster.nodes) {
      t.match(await call(node.url, 'POST', '/v1/advertiser/proof/verify-proof', { body: fields, headers: { 'x-forwarded-for': freshIp() } }), { status: 200, body: { verification: { valid: true } } }, `node-1's proof verifies on ${node.id}`)
    }
    t.match(await call(three.url, 'POST', '/v1/advertiser/proof/verify-proof', { body: { ...fields, screenId: 'scr_other' }, headers: { 'x-forwarded-for': freshIp() } }), { status: 200, body: { verification: { valid: false } } }, 'and an altered one does not')
  })

  t.test('screen time booked through several nodes at once is never sold twice; holds expire on every node; campaigns and deals move through any node', async (t) => {
    const [one, two, three] = c.nodes
    const ad = everywhereAd!
    const rival = (await onboard(cluster.frontUrl, 'booking-rival')).body.data.api_key.key as string
    for (const seat of ['creative-buyer', 'booking-rival']) {
      t.equal((await call(one.url, 'PUT', `/admin/v1/seats/${seat}/rate-limits`, { key: cluster.adminToken, body: { limits: { campaigns: 100000, inventory: 100000, deals: 100000 }, reason: 'cluster test' } })).status, 200)
    }
    const devices = (await call(one.url, 'GET', '/v1/partner/devices?limit=100', { key: screensPartner })).body.data.devices as Array<{ screen_id: string }>
    const screen = devices[0]!.screen_id
    const today = Date.now()
    const day = (n: number) => new Date(today + n * 86_400_000).toISOString().slice(0, 10)
    const availability = async (base: string, date: string) => (await call(base, 'POST', '/openrtb/v2/screens/availability', { key: ad.key, body: { screen_ids: [screen], start_date: date, end_date: date } })).body.data.screens[0].periods[0] as { capacity: number, booked: number }
    /** Polls every node until each shows booked spots on the date; what they showed last. */
    const bookedEverywhere = async (date: string, booked: number, within = 10_000): Promise<number[]> => await eventually(t, `every node shows ${booked} spots booked on ${date}`, () => Promise.all(cluster.nodes.map(async (n) => (await availability(n.url, date)).booked as number)), { within, every: 50, until: (shown) => shown.every((b) => b === booked) })
    const { capacity } = await availability(one.url, day(10))
    // More than half of a day's capacity: of three holds asked at the same moment through three nodes, one fits.
    const half = Math.floor(capacity / 2) + 1
    const hold = (base: string, key: string, date: string, spots: number) => call(base, 'POST', '/openrtb/v2/reservations', { key, body: { screen_ids: [screen], start_date: date, end_date: date, spots_per_day: spots } })
    const winners: Array<{ date: string, id: string, key: string }> = []
    for (let round = 0; round < 5; round++) {
      const date = day(10 + round)
      const race = await Promise.all([hold(one.url, ad.key, date, half), hold(two.url, rival, date, half), hold(three.url, ad.key, date, half)])
      t.same(race.map((r) => r.status).sort(), [201, 409, 409], `${date}: of three holds through three nodes, exactly one wins`)
      t.ok(race.filter((r) => r.status === 409).every((r) => r.body.error_code === 'capacity_unavailable'), 'the others are refused capacity_unavailable')
      const won = race.findIndex((r) => r.status === 201)
      winners.push({ date, id: race[won]!.body.data.reservation_id, key: won === 1 ? rival : ad.key })
      t.same(await bookedEverywhere(date, half), [half, half, half], `every node counts the ${half} held spots booked`)
    }

    // A hold's takes are declared, not rehearsed, on a cluster node: what its handler refuses before it takes anything,
    // the node refuses the same way, with nothing booked, and goes on serving.
    const refusedDate = day(30)
    for (const [body, status, code, param] of [
      [{ screen_ids: [screen, 'scr_nope'], start_date: refusedDate, end_date: refusedDate, spots_per_day: 1 }, 400, 'invalid_screen', 'screen_ids.1'],
      [{ screen_ids: [screen], start_date: day(32), end_date: refusedDate, spots_per_day: 1 }, 400, 'invalid_date', undefined],
      [{ screen_ids: [screen], start_date: refusedDate, end_date: refusedDate, spots_per_day: 1, creative_id: 'cr_nope' }, 404, 'creative_not_found', undefined]
    ] as const) {
      const refused = await call(two.url, 'POST', '/openrtb/v2/reservations', { key: ad.key, body })
      t.match(refused, { status, body: { error_code: code, ...(param !== undefined ? { param } : {}) } }, `a hold through node-2 refused ${code} before it takes anything`)
    }
    t.equal((await availability(two.url, refusedDate)).booked, 0, 'nothing booked by the refused holds')
    t.equal((await hold(two.url, ad.key, refusedDate, 1)).status, 201, 'node-2 goes on booking')

    // A guaranteed placement for exactly what is left of a day, asked by two seats through two nodes at once.
    const first = winners[0]!
    const rest = capacity - half
    const assign = (base: string, key: string) => call(base, 'POST', '/openrtb/v2/campaigns/assign', { key, body: { creative_id: ad.id, screen_ids: [screen], start_date: first.date, end_date: first.date, spots_per_day: rest } })
    const placed = await Promise.all([assign(two.url, ad.key), assign(three.url, ad.key)])
    t.same(placed.map((r) => r.status).sort(), [201, 409], 'the last spots of a day, placed through two nodes at once: sold once')
    t.same(await bookedEverywhere(first.date, capacity), [capacity, capacity, capacity], 'the day is full on every node, not oversold')
    t.match(await hold(one.url, rival, first.date, 1), { status: 409, body: { error_code: 'capacity_unavailable' } }, 'a spot more is refused through any node')

    // A hold taken through node-1 and confirmed through node-3 at once.
    const taken = await hold(one.url, ad.key, day(20), 10)
    t.equal(taken.status, 201)
    t.match(await call(three.url, 'POST', `/openrtb/v2/reservations/${taken.body.data.reservation_id as string}/confirm`, { key: ad.key, body: { creative_id: ad.id } }), { status: 200, body: { data: { status: 'confirmed' } } }, 'a hold confirmed through another node at once')
    const released = winners[1]!
    t.match(await call(two.url, 'DELETE', `/openrtb/v2/reservations/${released.id}`, { key: released.key }), { status: 200, body: { data: { status: 'released' } } }, 'a hold released through node-2')
    t.same(await bookedEverywhere(released.date, 0), [0, 0, 0], 'its spots are free on every node')
    t.match(await call(one.url, 'DELETE', `/openrtb/v2/reservations/${released.id}`, { key: released.key }), { status: 409, body: { error_code: 'invalid_transition' } }, 'released again through node-1: 409')

    // The holds left lapse after RESERVATION_HOLD_SECONDS (10 s here); one node's job expires each, under the catalog lock.
    const lapsing = winners.filter((w) => w !== released)
    for (const w of lapsing.slice(1)) t.same(await bookedEverywhere(w.date, 0, 30_000), [0, 0, 0], `${w.date}: the lapsed hold's spots are free on every node`)
    t.same(await bookedEverywhere(first.date, rest), [rest, rest, rest], `${first.date}: the placement's ${rest} spots stay booked, the hold's are free`)
    t.same(await bookedEverywhere(day(20), 10), [10, 10, 10], 'the confirmed hold keeps its spots as a placement')
    for (const node of cluster.nodes) {
      const expired = await Promise.all(lapsing.map(async (w) => (await call(node.url, 'GET', `/openrtb/v2/reservations/${w.id}`, { key: w.key })).body.error_code))
      t.same(expired, lapsing.map(() => 'expired'), `${node.id} answers 410 expired for each lapsed hold`)
    }

    // A campaign made through node-1, paused through node-2, shown paused by node-3 and resumed there.
    const made = await call(one.url, 'POST', '/openrtb/v2/campaigns', { key: ad.key, body: { creative_id: ad.id, name: 'Everywhere campaign', targeting: { country: 'US' } } })
    t.equal(made.status, 201, 'a campaign made through node-1')
    const campaign = made.body.data.campaign_id as string
    t.match(await call(two.url, 'POST', `/openrtb/v2/campaigns/${campaign}/pause`, { key: ad.key, body: { reason: 'cluster test' } }), { status: 200, body: { data: { status: 'paused', impressions: 0, spent_usd: 0 } } }, 'paused through node-2 at once')
    t.match(await call(three.url, 'POST', `/openrtb/v2/campaigns/${campaign}/resume`, { key: ad.key, body: {} }), { status: 200, body: { data: { status: 'active' } } }, 'resumed through node-3 at once')
    t.match(await call(three.url, 'POST', `/openrtb/v2/campaigns/${campaign}/resume`, { key: ad.key, body: {} }), { status: 409, body: { error_code: 'invalid_transition' } }, 'resumed again: 409, as on one node')
    const listed = await Promise.all(cluster.nodes.map(async (n) => (await eventually(t, `${n.id} lists the campaign`, async () => (await call(n.url, 'GET', '/openrtb/v2/campaigns', { key: ad.key })).body.data.campaigns.map((x: { campaign_id: string }) => x.campaign_id) as string[], { every: 0, until: (ids) => ids.includes(campaign) })).includes(campaign)))
    t.same(listed, [true, true, true], 'every node lists it among the seat\'s campaigns')

    // A deal proposed through node-1 and approved through node-3 is active on node-2.
    const proposed = await call(one.url, 'POST', '/openrtb/v2/deals/propose', { key: rival, body: { deal_id: 'deal-everywhere', type: 'PMP', floor_cpm: 3, invited_seats: ['creative-buyer'] } })
    t.equal(proposed.status, 201, 'a deal proposed through node-1')
    t.match(await call(two.url, 'POST', '/openrtb/v2/deals/propose', { key: rival, body: { deal_id: 'deal-everywhere', type: 'PMP', floor_cpm: 4 } }), { status: 409, body: { error_code: 'deal_already_exists' } }, 'its id proposed again through node-2: 409')
    t.equal((await call(three.url, 'POST', '/admin/v1/deals/deal-everywhere/approve', { key: cluster.adminToken, body: {} })).status, 200, 'approved through node-3 at once')
    const shown = await eventually(t, 'node-2 shows the deal active', async () => (await call(two.url, 'GET', '/openrtb/v2/deals/deal-everywhere', { key: ad.key })).body.data?.status as string | undefined, { every: 0, until: (x) => x === 'active' })
    t.equal(shown, 'active', 'node-2 offers the invited seat the active deal')
  })

  t.test('a screen\'s player through the front is served by one node, where its spots are kept and its chain grows', async (t) => {
    const devices = (await call(cluster.nodes[0]!.url, 'GET', '/v1/partner/devices?limit=100', { key: screensPartner })).body.data.devices as Array<{ device_id: string, embed_url: string }>
    const pageOf = (device: string) => new URL(devices.find((d) => d.device_id === device)!.embed_url).pathname
    const served = async () => Promise.all(cluster.nodes.slice(0, 3).map(async (n) => {
      const text = await (await fetch(`${n.url}/metrics`)).text()
      return [...text.matchAll(/^oohbid_http_requests_total\{method="GET",route="\/embed\/:token",status="\d+"\} (\d+)$/gm)].reduce((sum, m) => sum + Number(m[1]), 0)
    }))
    for (const device of ['d-7', 'd-8', 'd-9']) {
      const before = await served()
      const statuses: number[] = []
      for (let i = 0; i < 12; i++) statuses.push((await fetch(cluster.frontUrl + pageOf(device))).status)
      const after = await served()
      const took = after.map((n, i) => n - before[i]!)
      t.same([statuses.filter((s) => s === 200).length, took.filter((n) => n > 0)], [12, [12]], `${device}'s twelve page loads through HAProxy all reached one node (${took.join(', ')})`)
    }
  })

  t.test('a screen\'s proofs form one chain whichever nodes take its plays, at once too, listed, counted and verified alike by every node', async (t) => {
    const [one, two, three] = c.nodes
    const ad = everywhereAd!
    let n = 0
    const report = async (node: typeof one, plays: number, impressionId = () => `chain-imp-${++n}`) => await call(node.url, 'POST', '/v1/partner/impressions', {
      key: screensPartner,
      body: { impressions: Array.from({ length: plays }, () => ({ adId: ad.id, impressionId: impressionId(), deviceId: 'd-6', duration: 15, completed: true, timestamp: Date.now() - 1000 + n })) }
    })
    // A screen's plays reported through node-1, node-2, node-3 and node-1 again, one call after another, as when its
    // player moves to another node: no node waits to hold the others' proofs first.
    const signed: string[] = []
    for (const node of [one, two, three, one]) {
      const played = await report(node, 2)
      t.match(played, { status: 200, body: { data: { accepted: 2 } } }, `two plays reported through ${node.id}`)
      signed.push(...(played.body.data.results as Array<{ proof_id: string }>).map((r) => r.proof_id))
    }
    // Then through the three nodes at once, four plays a call, as a partner's servers behind a balancer send them. A
    // node whose proof log does not place a batch within the ack timeout (a loaded machine) answers 503 with
    // Retry-After, and the partner sends that batch again with the same impression ids, as the route says: its plays
    // come back proven, accepted now or duplicates naming the proofs the first try made.
    const firstTries: number[] = []
    const batches = await Promise.all([one, two, three].flatMap((node) => Array.from({ length: 5 }, async () => {
      const ids = Array.from({ length: 4 }, () => `chain-imp-${++n}`)
      let i = 0
      const first = await report(node, 4, () => ids[i++ % 4]!)
      firstTries.push(first.status)
      if (first.status !== 503) return first
      return await eventually(t, `a batch through ${node.id} sent again after its 503`, () => report(node, 4, () => ids[i++ % 4]!), { within: 30_000, every: 1000, until: (r) => r.status !== 503 })
    })))
    const atOnce = batches.flatMap((b) => (b.body.data?.results ?? []) as Array<{ status: string, proof_id: string }>).filter((r) => r.status === 'accepted' || r.status === 'duplicate')
    t.equal(atOnce.length, 60, `60 plays reported through three nodes at once, each proven (first tries: ${firstTries.join(' ')})`)
    // One impression id through two nodes at the same moment: proven once, the other answer naming that proof.
    const twice = await Promise.all([two, three].map(async (node) => await report(node, 1, () => 'chain-imp-twice')))
    const outcomes = twice.map((r) => r.body.data.results[0] as { status: string, proof_id: string })
    t.same(outcomes.map((o) => o.status).sort(), ['accepted', 'duplicate'], 'one impression id through node-2 and node-3 at once: accepted once, a duplicate once')
    t.equal(outcomes[0]!.proof_id, outcomes[1]!.proof_id, 'both name the one proof')
    const total = signed.length + atOnce.length + 1
    const screenId = (await call(one.url, 'GET', `/v1/advertiser/proof/proofs/${signed[0]!}`, { key: ad.key })).body.data.screenId as string
    type Link = { proof_id: string, chain: { seq: number, prev_digest: string, digest: string } }
    const chainOn = async (base: string): Promise<Link[]> => ((await call(base, 'GET', `/v1/advertiser/proof/proofs?screen_id=${screenId}&limit=100`, { key: ad.key })).body.data.proofs as Link[]).sort((a, b) => a.chain.seq - b.chain.seq)
    const chains = await eventually(t, `every node lists the ${total} proofs`, () => Promise.all(c.nodes.map((node) => chainOn(node.url))), { every: 50, until: (all) => all.every((x) => x.length === total) })
    const chain = chains[0]!
    t.same(chain.slice(0, signed.length).map((p) => p.proof_id), signed, 'the eight reported one call after another, in the order they were reported')
    t.same(chain.map((p) => p.chain.seq), Array.from({ length: total }, (_, i) => i + 1), `one chain of ${total} places: consecutive sequence numbers, none held twice`)
    t.ok(chain.every((p, i) => i === 0 || p.chain.prev_digest === chain[i - 1]!.chain.digest), 'each proof chains from the one before, whichever node took that one')
    t.same(chains.map((c) => JSON.stringify(c)), chains.map(() => JSON.stringify(chain)), 'every node lists the same chain')
    const last = (await call(three.url, 'GET', `/v1/advertiser/proof/proofs/${signed[signed.length - 1]!}`, { key: ad.key })).body.data
    const fields = { signature: last.signature, timestamp: last.timestamp, adId: last.adId, impressionId: last.impressionId, screenId: last.screenId, deviceId: last.deviceId }
    t.match(await call(two.url, 'POST', '/v1/advertiser/proof/verify-proof', { body: fields, headers: { 'x-forwarded-for': freshIp() } }), { status: 200, body: { verification: { valid: true } } }, 'node-1\'s last proof verifies on node-2')
    const today = new Date().toISOString().slice(0, 10)
    const countsOn = async () => await Promise.all(cluster.nodes.slice(0, 3).map(async (node) => (await call(node.url, 'GET', `/openrtb/v2/proof-of-play?start_date=${today}&end_date=${today}&limit=1`, { key: ad.key })).body.data.counts))
    const counts = await eventually(t, 'every node counts the seat\'s proofs', countsOn, { every: 50, until: (all) => all.every((x) => x.total === total + 1) })
    t.same(counts, counts.map(() => counts[0]), `the seat's proof-of-play counts are the same through every node: ${JSON.stringify(counts[0])}`)
    t.equal(counts[0].total, total + 1, 'and count every proof once: these, the one proven twice at once, and the creative\'s first')
    t.match(await call(three.url, 'POST', '/v1/partner/impressions', { key: screensPartner, body: { impressions: [{ adId: ad.id, impressionId: 'chain-imp-1', deviceId: 'd-6', duration: 15, completed: true, timestamp: Date.now() }] } }), { status: 200, body: { data: { accepted: 0, duplicates: 1, results: [{ status: 'duplicate', proof_id: signed[0] }] } } }, 'an impression proven through node-1, reported again through node-3: a duplicate, its proof node-1\'s')
  })

  t.test('an exchange bids through any node; a bid\'s notices reach, through the load balancer, the node that made it', async (t) => {
    const [one, two, three] = c.nodes
    const exchangeIp = '198.51.100.7'
    const alias = await call(one.url, 'PUT', '/admin/v1/bidder-aliases/adx', { key: cluster.adminToken, body: { name: 'Ad Exchange', ip_allowlist: ['198.51.100.0/24'], require_signature: true } })
    t.equal(alias.status, 201, 'an exchange\'s alias made through node-1')
    const secret = alias.body.data.signing_secret as string
    const made = await onboard(cluster.frontUrl, 'exchange-buyer')
    const key = made.body.data.api_key.key as string
    t.equal((await call(two.url, 'POST', '/admin/v1/seats/exchange-buyer/approve', { key: cluster.adminToken, body: {} })).status, 200)
    // The campaign's spend is polled through every node until all three show it: more than the campaigns group's 100
    // calls a minute when a loaded machine takes seconds to replicate it.
    t.equal((await call(two.url, 'PUT', '/admin/v1/seats/exchange-buyer/rate-limits', { key: cluster.adminToken, body: { limits: { campaigns: 100000 }, reason: 'cluster test polls every node' } })).status, 200)
    const creative = await call(one.url, 'POST', '/openrtb/v2/creatives', { key, body: { name: 'Exchange ad', content_type: 'image/png', creative_url: 'https://assets.invalid/exchange.png' } })
    await approveCreative(t, c, two.url, creative.body.data.creative_id as string)
    const today = new Date().toISOString().slice(0, 10)
    const campaign = await call(two.url, 'POST', '/openrtb/v2/campaigns', { key, body: { creative_id: creative.body.data.creative_id, name: 'Exchange campaign', budget_usd: 100, bid_cpm: 5, pacing: 'asap', start_date: today, end_date: today, targeting: { country: 'US' } } })
    t.equal(campaign.status, 201, 'a campaign made through node-2')
    const bidRequest = (id: string) => ({ id, at: 1, tmax: 500, cur: ['USD'], imp: [{ id: '1', banner: { w: 1920, h: 1080 }, bidfloor: 2, bidfloorcur: 'USD', qty: { multiplier: 100, sourcetype: 1 } }], dooh: { id: 'their-screen-1', venuetype: ['2', '205'], venuetypetax: 5 }, device: { geo: { country: 'USA', region: 'TX', city: 'Austin', lat: 30.27, lon: -97.74 } } })
    const ask = async (base: string, id: string) => {
      const raw = JSON.stringify(bidRequest(id))
      const res = await fetch(`${base}/openrtb/bidder/adx/bid`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-forwarded-for': exchangeIp, 'x-exchange-signature': signRequest(secret, Math.floor(Date.now() / 1000), raw) }, body: raw })
      return { status: res.status, body: res.status === 200 ? await res.json() as any : undefined }
    }
    // node-3 bids once it holds a part of the campaign's budget: its first requests ask the engine for one.
    const bids: Array<{ nurl: string, burl: string }> = []
    let asked = 0
    await eventually(t, 'node-3 bids on six requests', async () => {
      const r = await ask(three.url, `req-${asked++}`)
      if (r.status === 200) bids.push(r.body.seatbid[0].bid[0])
      else await pause(50)
      return bids.length
    }, { every: 0, until: (n) => n >= 6 })
    t.equal(bids.length, 6, 'node-3 bid on six requests')
    t.ok(bids.every((b) => new URL(b.nurl).searchParams.get('node') === 'node-3' && new URL(b.burl).searchParams.get('node') === 'node-3'), 'each bid\'s notices name node-3, which keeps the bid')
    const fire = async (url: string) => {
      const u = new URL(url.replace('${AUCTION_PRICE}', '4').replace('${AUCTION_MULTIPLIER}', '100').replace('${AUCTION_IMP_TS}', String(Date.now())))
      return (await fetch(`${cluster.frontUrl}${u.pathname}${u.search}`, { headers: { 'x-forwarded-for': exchangeIp } })).status
    }
    const settled = await Promise.all(bids.map(async (b) => [await fire(b.nurl), await fire(b.burl)]))
    t.same(settled, bids.map(() => [204, 204]), 'every win and billing notice sent through HAProxy reached node-3 and settled its bid')
    const spent = await eventually(t, 'every node shows $2.40 spent', () => Promise.all(c.nodes.map(async (n) => (await call(n.url, 'GET', `/openrtb/v2/campaigns/${campaign.body.data.campaign_id as string}`, { key })).body.data.spent_usd as number)), { every: 100, until: (all) => all.every((x) => x === 2.4) })
    t.same(spent, [2.4, 2.4, 2.4], 'six plays billed at $4 CPM for 100 impressions each: $2.40, shown by every node')
    t.match(await call(two.url, 'POST', '/openrtb/bidder/adx/bid', { body: bidRequest('unsigned'), headers: { 'x-forwarded-for': exchangeIp } }), { status: 401, body: { error_code: 'invalid_signature' } }, 'node-2 knows the alias: an unsigned request is refused there as on one node')
  })

  t.test('a bid taken through any node wins the spot its screen\'s owner decides, asked through any node; a node that neither took it nor owns its screen never holds it', async (t) => {
    const [one] = c.nodes
    const receiver = await startReceiver(t, true)
    const { key, creativeId } = await approvedBidder(t, c, 'book-buyer', { approvedThrough: c.nodes[1].url, writesThrough: one.url })
    const devices = (await call(one.url, 'GET', '/v1/partner/devices?limit=100', { key: screensPartner })).body.data.devices as Array<{ device_id: string, screen_id: string, embed_url: string }>
    const requests = (await call(one.url, 'GET', '/openrtb/v2/adslots?format=openrtb&limit=100', { key })).body.data.bid_requests as Array<{ imp: Array<{ id: string }>, ext: { trb: { screen_id: string } } }>
    const impOf = (screenId: string) => requests.find((r) => r.ext.trb.screen_id === screenId)!.imp[0]!.id
    const notice = (kind: string, screenId: string) => `${receiver.url}/${kind}/${screenId}?price=\${AUCTION_PRICE}&loss=\${AUCTION_LOSS}`
    // Which node decides each screen's spots: the one serving its partition, as each node's /readyz says.
    const served = await untilServed(t, c, c.nodes)
    const ownerOf = (screenId: string) => c.nodes[served.findIndex((ps) => ps.includes(partitionOf(screenId, PARTITIONS)))]!
    // One screen of d-20 to d-30 owned by each node that has one.
    const spare = devices.filter((d) => Number(d.device_id.slice(2)) >= 20)
    const screens = c.nodes.map((n) => spare.find((d) => ownerOf(d.screen_id) === n)).filter((d) => d !== undefined)
    t.ok(screens.length >= 2, `screens owned by ${screens.length} different nodes: ${screens.map((d) => `${d.device_id} by ${ownerOf(d.screen_id).id}`).join(', ')}`)
    const booked = async (base: string) => Number(/^oohbid_book_bids (\d+)$/m.exec(await (await fetch(`${base}/metrics`)).text())?.[1])
    const before = await Promise.all(c.nodes.map((n) => booked(n.url)))
    const bid = await call(one.url, 'POST', '/openrtb/v2/bid', { key, body: { id: 'book-1', seatbid: [{ bid: screens.map((d, i) => ({ id: `book-${i}`, impid: impOf(d.screen_id), price: 50, crid: creativeId, adm: '<b>book</b>', nurl: notice('win', d.screen_id), lurl: notice('loss', d.screen_id) })) }] } })
    t.match(bid, { status: 200, body: { data: { accepted: screens.length, rejected: 0 } } }, 'one bid a screen, taken through node-1 and acknowledged once the engine held them')
    const spotPath = (d: { embed_url: string }) => `${new URL(d.embed_url).pathname}/spots`
    for (const d of screens) {
      // The bid reaches its owner's book milliseconds after node-1's answer: a dry run, through any node, looks without settling.
      await eventually(t, `${ownerOf(d.screen_id).id}'s book has the bid for ${d.device_id}`, async () => (await call(c.nodes[2].url, 'POST', `${spotPath(d)}?dry_run=true`, { body: {} })).body.data?.tier, { every: 20, until: (tier) => tier === 'open_auction' })
    }
    // Each node holds the bids it took and those of the screens it owns, no others: not every bid on every node.
    const after = await Promise.all(c.nodes.map((n) => booked(n.url)))
    t.same(after.map((n, i) => n - before[i]!), c.nodes.map((n) => n === one ? screens.length : screens.filter((d) => ownerOf(d.screen_id) === n).length), `each node holds only the bids it took or whose screen it owns (${after.map((n, i) => `${c.nodes[i]!.id} +${n - before[i]!}`).join(', ')})`)

    // Each screen's spot asked through a node other than its owner, which forwards it there.
    const decided: string[] = []
    for (const d of screens) {
      const owner = ownerOf(d.screen_id)
      const node = c.nodes.find((n) => n !== owner)!
      const spot = (await call(node.url, 'POST', spotPath(d), { body: {} })).body.data
      t.match(spot, { tier: 'open_auction', adm: '<b>book</b>', creative: { creative_id: creativeId } }, `${d.device_id}'s spot, asked through ${node.id} and decided by its owner ${owner.id}, is won by the bid node-1 took`)
      decided.push(spot.spot_id as string)
      const events = await call(node.url, 'POST', `${spotPath(d)}/${spot.spot_id as string}/events`, { body: { event: 'render_started' } })
      t.equal(events.status, 200, `its render reported through ${node.id} reaches the spot, kept where it was decided`)
    }
    // Once settled by the owner, the bid is out of the book: no node sells it again.
    for (const d of screens) {
      const tiers = await eventually(t, `${d.device_id}'s bid out of the book`, () => Promise.all(c.nodes.map(async (n) => (await call(n.url, 'POST', `${spotPath(d)}?dry_run=true`, { body: {} })).body.data?.tier as string)), { every: 20, until: (all) => !all.includes('open_auction') })
      t.notOk(tiers.includes('open_auction'), `${d.device_id}: no node finds the bid ${ownerOf(d.screen_id).id} settled (tiers now ${tiers.join(', ')})`)
    }
    const winsIn = () => receiver.received.filter((r) => r.path.startsWith('/win/'))
    await eventually(t, 'a win notice a bid at the receiver', winsIn, { every: 50, until: (w) => w.length >= screens.length })
    // Half a second more, in which a second notice for any bid would arrive.
    await pause(500)
    const wins = winsIn()
    t.same(wins.map((r) => r.path).sort(), screens.map((d) => `/win/${d.screen_id}`).sort(), 'one win notice a bid, sent by the owner that decided its spot')
    t.ok(wins.every((r) => Number(r.query.get('price')) > 0), 'each with its clearing price')
    t.same(receiver.received.filter((r) => r.path.startsWith('/loss/')).map((r) => r.path), [], 'and no loss notice for any of them')
    t.equal(decided.length, screens.length)
    // Counted where they happened (the bids on node-1, each win on the node that decided it), shown alike by every node.
    const counters = async (base: string) => {
      const d = (await call(base, 'GET', '/openrtb/v2/stats', { key })).body.data
      return { bids: d.bids, accepted: d.accepted, wins: d.wins }
    }
    const n = screens.length
    const shown = await eventually(t, `every node counts the ${n} wins`, () => Promise.all(c.nodes.map((node) => counters(node.url))), { every: 50, until: (all) => all.every((x) => x.wins === n) })
    t.same(shown, shown.map(() => ({ bids: n, accepted: n, wins: n })), `GET /stats through every node: ${n} bids, ${n} accepted, ${n} wins, each node's counters summed`)
  })

  t.test('the whole marketplace loop through the front: onboard, creative, bid, spot, play, proof and report', async (t) => {
    const front = cluster.frontUrl
    const key = (await onboard(front, 'loop-buyer')).body.data.api_key.key as string
    t.equal((await call(front, 'POST', '/admin/v1/seats/loop-buyer/approve', { key: cluster.adminToken, body: {} })).status, 200, 'onboarded and approved through the front')
    t.equal((await call(front, 'PUT', '/admin/v1/seats/loop-buyer/rate-limits', { key: cluster.adminToken, body: { limits: { inventory: 100000, bidding: 100000, creatives: 100000, account: 100000, reporting: 100000 }, reason: 'cluster test polls every node' } })).status, 200)
    const creativeId = (await call(front, 'POST', '/openrtb/v2/creatives', { key, body: { name: 'Loop ad', content_type: 'image/png', creative_url: 'https://assets.invalid/loop.png' } })).body.data.creative_id as string
    t.ok(await approveCreative(t, c, front, creativeId), 'a creative registered and approved through the front')
    // Approved on every node before bidding: the front may pick any of them.
    await approvedEverywhere(t, c, c.nodes, key, creativeId)
    const device = ((await call(front, 'GET', '/v1/partner/devices?limit=100', { key: screensPartner })).body.data.devices as Array<{ device_id: string, screen_id: string, embed_url: string }>).find((d) => d.device_id === 'd-13')!
    const requests = (await call(front, 'GET', '/openrtb/v2/adslots?format=openrtb&limit=100', { key })).body.data.bid_requests as Array<{ imp: Array<{ id: string }>, ext: { trb: { screen_id: string } } }>
    const impid = requests.find((r) => r.ext.trb.screen_id === device.screen_id)!.imp[0]!.id
    const bid = await call(front, 'POST', '/openrtb/v2/bid', { key, body: { id: 'loop-1', seatbid: [{ bid: [{ id: 'loop-1', impid, price: 60, crid: creativeId, adm: '<b>loop</b>' }] }] } })
    t.match(bid, { status: 200, body: { data: { accepted: 1 } } }, 'a bid through the front')
    const embed = new URL(device.embed_url).pathname
    await eventually(t, 'the bid in the book of whichever node the front picks', async () => (await call(front, 'POST', `${embed}/spots?dry_run=true`, { body: {} })).body.data?.tier, { every: 20, until: (tier) => tier === 'open_auction' })
    const spot = (await call(front, 'POST', `${embed}/spots`, { body: {} })).body.data
    t.match(spot, { tier: 'open_auction', creative: { creative_id: creativeId } }, 'the screen\'s player, through the front, gets the spot the bid won')
    t.equal((await call(front, 'POST', `${embed}/spots/${spot.spot_id as string}/events`, { body: { event: 'render_started' } })).status, 200)
    const played = await call(front, 'POST', `${embed}/spots/${spot.spot_id as string}/events`, { body: { event: 'play_completed', duration_ms: 15_000 } })
    t.equal(played.status, 200, 'and plays it, through the front')
    const proofs = await eventually(t, 'the play\'s proof listed through the front', async () => ((await call(front, 'GET', `/v1/advertiser/proof/proofs?screen_id=${device.screen_id}&limit=10`, { key })).body.data?.proofs ?? []) as Array<Record<string, unknown>>, { every: 50, until: (p) => p.length > 0 })
    t.equal(proofs.length, 1, 'its proof of play is listed through the front')
    const proof = proofs[0]!
    const fields = { signature: proof.signature, timestamp: proof.timestamp, adId: proof.adId, impressionId: proof.impressionId, screenId: proof.screenId, deviceId: proof.deviceId }
    t.match(await call(front, 'POST', '/v1/advertiser/proof/verify-proof', { body: fields, headers: { 'x-forwarded-for': freshIp() } }), { status: 200, body: { verification: { valid: true } } }, 'and verifies')
    const stats = await eventually(t, 'the seat\'s win and spend in GET /stats through the front', async () => (await call(front, 'GET', '/openrtb/v2/stats', { key })).body.data as { bids: number, wins: number, spend_usd: number }, { every: 50, until: (x) => x.wins === 1 && x.spend_usd > 0 })
    t.match(stats, { bids: 1, accepted: 1, wins: 1 }, 'and the seat\'s report through the front counts the bid and its win')
    t.ok(stats.spend_usd > 0, `with its spend ($${stats.spend_usd})`)
  })
}
