import { createHash } from 'node:crypto'
import t from 'tap'
import { signRequest } from '../src/auth/hmac.js'
import { adImage } from './helpers/media.js'
import { approveCreative, approvedBidder, approvedEverywhere, assetOn, clusterAvailable, everyNode, startTestCluster } from './helpers/cluster.js'
import { eventually, pause } from './helpers/eventually.js'
import { startReceiver } from './helpers/receiver.js'
import { freshIp } from './helpers/service.js'

// What a cluster keeps right (test/helpers/cluster.ts starts it): seats, keys and idempotency through any node, one
// winner of every race, a rate limit held cluster-wide, screens, creatives and their bytes, bookings never sold twice,
// a screen's player and its proof chain on one node, an exchange's notices, a bid won on another node, and the whole
// marketplace loop through the front.

if (clusterAvailable(t)) {
  const c = await startTestCluster(t)
  const { cluster, call, onboard, seatStatus } = c
  /** The partner key of the screens test, whose screens the tests after it play on. */
  let screensPartner = ''
  /** The creative test's ad, which the tests after it book and play. */
  let everywhereAd: { id: string, bytes: Buffer, key: string } | undefined

  t.test('a seat onboarded through the front works on every node; a key revoked through one is refused by every node at once', async (t) => {
    const made = await onboard(cluster.frontUrl, 'everywhere')
    t.equal(made.status, 201, 'onboarded through HAProxy')
    const key = made.body.data.api_key.key as string
    for (const node of cluster.nodes) t.equal(await seatStatus(node.url, key), 200, `${node.id} knows the key as soon as onboarding answered`)
    const minted = await call(cluster.nodes[0]!.url, 'POST', '/openrtb/v2/keys', { key, body: { label: 'to-revoke' } })
    t.equal(minted.status, 201)
    const second = minted.body.data.key as string
    for (const node of cluster.nodes) t.equal(await seatStatus(node.url, second), 200, `the key minted on node-1 works on ${node.id} as soon as minting answered`)
    const revoked = await call(cluster.nodes[1]!.url, 'DELETE', `/openrtb/v2/keys/${minted.body.data.key_id as string}`, { key })
    t.equal(revoked.status, 200, 'revoked through node-2')
    // Milliseconds here; 5 s allowed, for a machine busy with other work.
    const took = await everyNode(t, c, cluster.nodes, second, 401, 5000)
    t.not(took, undefined, 'every node refuses the revoked key')
    t.comment(`revocation seen by all three nodes ${took?.toFixed(1)} ms after node-2 answered`)
    t.equal(await seatStatus(cluster.frontUrl, key), 200, 'the seat\'s other key still works')
    const bad = await call(cluster.nodes[2]!.url, 'DELETE', '/openrtb/v2/keys/00000000-0000-0000-0000-000000000000', { key })
    t.match(bad, { status: 404, body: { error_code: 'not_found' } }, 'bad input on a cluster node answers as on one node')
    t.equal(await seatStatus(cluster.nodes[2]!.url, key), 200, 'and the node goes on serving')
  })

  t.test('a seat_id or partner slug registered through several nodes at the same moment has one winner', async (t) => {
    const outcomes: string[] = []
    for (let i = 0; i < 10; i++) {
      const seat = `race-${i}`
      const replies = await Promise.all(cluster.nodes.map((n) => onboard(n.url, seat)))
      const won = replies.filter((r) => r.status === 201)
      const lost = replies.filter((r) => r.status === 409)
      outcomes.push(`${won.length}/${lost.length}`)
      for (const r of lost) t.match(r.body, { error_code: 'seat_id_already_registered', param: 'seat_id' })
      if (won.length === 1) t.not(await everyNode(t, c, cluster.nodes, won[0]!.body.data.api_key.key, 200, 1000), undefined, `${seat}: the winner's key works on every node`)
    }
    t.same(outcomes, outcomes.map(() => '1/2'), 'each of 10 seat_ids onboarded through three nodes at once: one 201, two 409')
    const slugs: string[] = []
    for (let i = 0; i < 5; i++) {
      const body = { name: `Race Screens ${i}`, slug: `race-screens-${i}`, partner_type: 'screen_operator', contact_email: `ops@race${i}.example` }
      const replies = await Promise.all(cluster.nodes.map((n) => call(n.url, 'POST', '/v1/partner/register', { body, headers: { 'x-forwarded-for': freshIp() } })))
      slugs.push(`${replies.filter((r) => r.status === 201).length}/${replies.filter((r) => r.status === 409 && r.body.error?.code === 'ALREADY_EXISTS').length}`)
    }
    t.same(slugs, slugs.map(() => '1/2'), 'each of 5 partner slugs registered through three nodes at once: one 201, two 409')

    const bad = await call(cluster.nodes[0]!.url, 'POST', '/openrtb/v2/onboard', { body: { company_name: 'Back Media', seat_id: 'back-again', contact_email: 'a@back.example', webhook_url: 'http://hooks.example/hook' }, headers: { 'x-forwarded-for': freshIp() } })
    t.match(bad, { status: 400, body: { error_code: 'invalid_webhook_url' } }, 'a refused onboarding')
    // A name given back is claimed again as a new numbered hold: three nodes racing for it still have one winner.
    const again = await Promise.all(cluster.nodes.map((n) => onboard(n.url, 'back-again')))
    t.same(again.map((r) => r.status).sort(), [201, 409, 409], 'gives its seat_id back: of three nodes registering it next at once, one wins')
  })

  t.test('an Idempotency-Key sent through two nodes at the same moment runs once; keys minted for one seat at once are all listed', async (t) => {
    const made = await onboard(cluster.frontUrl, 'idempotent-twice')
    const key = made.body.data.api_key.key as string
    const outcomes: string[] = []
    const minted = new Set<string>()
    for (let i = 0; i < 10; i++) {
      const headers = { 'idempotency-key': `twice-${i}` }
      const replies = await Promise.all([cluster.nodes[0]!, cluster.nodes[1]!].map((n) => call(n.url, 'POST', '/openrtb/v2/keys', { key, body: { label: `twice-${i}` }, headers })))
      const ran = replies.filter((r) => r.status === 201 && r.headers.get('idempotent-replayed') === null)
      const replayed = replies.filter((r) => r.status === 201 && r.headers.get('idempotent-replayed') === 'true')
      const inUse = replies.filter((r) => r.status === 409 && r.body.error_code === 'idempotency_key_in_use')
      outcomes.push(`${ran.length} ran, ${replayed.length + inUse.length} replayed or 409`)
      for (const r of [...ran, ...replayed]) minted.add(r.body.data.key_id as string)
    }
    t.same(outcomes, outcomes.map(() => '1 ran, 1 replayed or 409'), 'each of 10 keys: the request ran on one node; the other replayed its outcome or answered 409 idempotency_key_in_use')
    t.equal(minted.size, 10, 'a replay carries the key the request minted')
    const listed = (await call(cluster.nodes[2]!.url, 'GET', '/openrtb/v2/keys', { key })).body.data.keys as Array<{ key_id: string }>
    t.equal(listed.length, 11, 'the seat has its first key and the ten minted, no more')
    const again = await call(cluster.nodes[2]!.url, 'POST', '/openrtb/v2/keys', { key, body: { label: 'twice-0' }, headers: { 'idempotency-key': 'twice-0' } })
    t.equal(again.headers.get('idempotent-replayed'), 'true', 'a later retry through a third node replays', { status: again.status, body: again.body })
    const other = await call(cluster.nodes[2]!.url, 'POST', '/openrtb/v2/keys', { key, body: { label: 'different' }, headers: { 'idempotency-key': 'twice-0' } })
    t.match(other, { status: 422, body: { error_code: 'idempotency_key_mismatch' } }, 'and the key with another body is refused there as on one node')

    // Without Idempotency-Keys both run: each key is a row of its own in the seat's list, so neither write hides the other.
    const both = await Promise.all(cluster.nodes.map((n, i) => call(n.url, 'POST', '/openrtb/v2/keys', { key, body: { label: `together-${i}` } })))
    t.same(both.map((r) => r.status), [201, 201, 201], 'three keys minted for one seat through three nodes at the same moment')
    const together = await eventually(t, 'node-1 lists the three keys', async () => ((await call(c.nodes[0].url, 'GET', '/openrtb/v2/keys', { key })).body.data.keys as Array<{ label?: string }>).map((k) => k.label ?? '').filter((l) => l.startsWith('together-')), { every: 10, until: (l) => l.length === 3 })
    t.same(together.sort(), ['together-0', 'together-1', 'together-2'], 'the seat lists all three on every node')
  })

  t.test('a seat rewritten through two nodes at the same moment keeps both changes; its last live key cannot be revoked twice', async (t) => {
    const made = await onboard(cluster.frontUrl, 'two-operators')
    const key = made.body.data.api_key.key as string
    /** An operator's change, retried as its Retry-After says when the node could not lock or catch up in time. */
    const admin = async (base: string, limits: Record<string, number>) => await eventually(t, `an operator's change through ${base} answered`, () => c.admin(base, 'PUT', '/admin/v1/seats/two-operators/rate-limits', { limits }), { within: 5000, every: 1000, until: (r) => r.status !== 503 })
    for (let i = 1; i <= 5; i++) {
      const [a, b] = await Promise.all([admin(cluster.nodes[0]!.url, { bidding: 5000 + i }), admin(cluster.nodes[1]!.url, { reporting: 300 + i })])
      t.same([a.status, b.status], [200, 200], `round ${i}: both operators answered`)
      // Both are acknowledged (a quorum of the engine holds them); node-3 applies them milliseconds later (seconds when
      // its watch stalled and the watchdog replaces it).
      const limits = await eventually(t, `round ${i}: node-3 holds both changes`, async () => (await c.admin(c.nodes[2].url, 'GET', '/admin/v1/seats/two-operators')).body.data.rate_limits as Record<string, number>, { within: 15_000, every: 10, until: (l) => l.bidding === 5000 + i && l.reporting === 300 + i })
      t.match(limits, { bidding: 5000 + i, reporting: 300 + i }, `round ${i}: node-3 holds both changes`)
    }
    const second = await call(cluster.nodes[0]!.url, 'POST', '/openrtb/v2/keys', { key, body: { label: 'second' } })
    const keys = [key, second.body.data.key as string]
    const ids = await Promise.all(keys.map(async (k) => (await call(cluster.nodes[0]!.url, 'GET', '/openrtb/v2/seat', { key: k })).body.data.key.key_id as string))
    // Each key revokes the other, through its own node, at the same moment: one must stay.
    const revoked = await Promise.all([0, 1].map((i) => call(cluster.nodes[i]!.url, 'DELETE', `/openrtb/v2/keys/${ids[1 - i]!}`, { key: keys[i]! })))
    t.same(revoked.map((r) => r.status).sort(), [200, 409], 'one revocation went through; the other found the last live key', { bodies: revoked.map((r) => r.body) })
    const live = await Promise.all(keys.map((k) => seatStatus(cluster.nodes[2]!.url, k)))
    t.same(live.sort(), [200, 401], 'the seat keeps one live key')
  })

  t.test('a key\'s rate limit holds cluster-wide within 10%, however its requests are spread over the nodes', async (t) => {
    /** Sets the seat's account limit through node-1 and waits until every node applies it. */
    const limited = async (seatId: string, limit: number) => {
      const made = await onboard(cluster.frontUrl, seatId)
      t.equal(made.status, 201)
      const key = made.body.data.api_key.key as string
      const set = await call(cluster.nodes[0]!.url, 'PUT', `/admin/v1/seats/${seatId}/rate-limits`, { key: cluster.adminToken, body: { limits: { account: limit }, reason: 'cluster test' } })
      t.equal(set.status, 200)
      for (const node of cluster.nodes) {
        const seen = await eventually(t, `${node.id} applies the limit`, async () => (await call(node.url, 'GET', '/openrtb/v2/seat', { key })).headers.get('ratelimit-limit') ?? '', { every: 0, until: (l) => l === String(limit) })
        t.equal(seen, String(limit), `${node.id} applies the limit`)
      }
      return key
    }
    /** Sends GET /openrtb/v2/seat through each base until each has answered 429; the statuses seen. */
    const flood = async (key: string, bases: string[], perBase: number) => {
      const statuses: number[] = []
      let reset = Infinity
      await Promise.all(bases.flatMap((base) => Array.from({ length: perBase }, async () => {
        for (;;) {
          const r = await call(base, 'GET', '/openrtb/v2/seat', { key })
          statuses.push(r.status)
          reset = Math.min(reset, Number(r.headers.get('ratelimit-reset')))
          if (r.status !== 200) return
        }
      })))
      return { ok: statuses.filter((s) => s === 200).length, refused: statuses.filter((s) => s === 429).length, other: statuses.filter((s) => s !== 200 && s !== 429), reset }
    }
    /** Starts where the minute window has 10 s or more left, which a flood takes well within: it must fall in one. */
    const freshWindow = async (key: string) => {
      const reset = Number((await call(cluster.frontUrl, 'GET', '/openrtb/v2/seat', { key })).headers.get('ratelimit-reset'))
      if (reset < 10) await pause((reset + 1) * 1000)
    }

    const spread = await limited('spread-limit', 600)
    await freshWindow(spread)
    // Three clients on each node and three through the front: every node takes a share of the key's requests.
    const all = await flood(spread, [...cluster.nodes.map((n) => n.url), cluster.frontUrl], 3)
    t.same(all.other, [], 'every answer a 200 or a 429')
    t.ok(all.reset >= 1, 'within one window')
    // Within 10% either way: the window also holds the requests made before the flood (freshWindow's, the limit's
    // checks), and parts granted to a node that its clients stopped using are not spent.
    t.ok(all.ok >= 540 && all.ok <= 660, `a limit of 600 a minute over three nodes: ${all.ok} answered 200, ${all.refused} refused`)
    t.comment(`limit 600/min, 12 clients spread over 3 nodes and the front: ${all.ok} allowed in the flood (${((all.ok / 600 - 1) * 100).toFixed(1)}% off the limit)`)

    const single = await limited('single-node-limit', 200)
    await freshWindow(single)
    const one = await flood(single, [cluster.nodes[0]!.url], 4)
    t.ok(one.ok >= 180 && one.ok <= 220, `a client that reaches one node only gets the whole limit of 200, not a third: ${one.ok} answered 200`)
    t.comment(`limit 200/min through node-1 only: ${one.ok} allowed`)
  })

  t.test('screens registered, changed and measured through any node are listed by every node; a walk through the front sees each once', async (t) => {
    const [one, two, three] = c.nodes
    const registered = await call(cluster.frontUrl, 'POST', '/v1/partner/register', { body: { name: 'Everywhere Screens', slug: 'everywhere-screens', contact_email: 'ops@everywhere.example', partner_type: 'screen_operator', domain: 'everywhere.example' }, headers: { 'x-forwarded-for': freshIp() } })
    t.equal(registered.status, 201)
    const partner = screensPartner = registered.body.data.api_key.key as string
    const device = (i: number) => ({ device_id: `d-${i}`, name: `Screen ${i}`, display: { width: 1920, height: 1080 }, location: { lat: 30.2672, lng: -97.7431, venue_type: 'gym', city: 'Austin', state: 'TX', country: 'US' }, capabilities: { fein: true } })
    const batch = await call(one.url, 'POST', '/v1/partner/devices/batch', { key: partner, body: { devices: Array.from({ length: 30 }, (_, i) => device(i)) } })
    t.equal(batch.status, 200, 'thirty devices registered through node-1')
    const single = await call(two.url, 'POST', '/v1/partner/device', { key: partner, body: device(30) })
    t.equal(single.status, 201, 'one more through node-2')
    const answeredAt = performance.now()
    const ids = new Set<string>([...batch.body.data.results.map((r: { screen_id: string }) => r.screen_id), single.body.data.screen_id])

    const made = await onboard(cluster.frontUrl, 'screen-buyer')
    const buyer = made.body.data.api_key.key as string
    t.equal((await call(three.url, 'PUT', '/admin/v1/seats/screen-buyer/rate-limits', { key: cluster.adminToken, body: { limits: { inventory: 100000 }, reason: 'cluster test' } })).status, 200)
    const listed = async (base: string): Promise<any[]> => {
      const r = await call(base, 'GET', '/openrtb/v2/adslots?format=screens&limit=100', { key: buyer })
      return r.status === 200 ? r.body.data.screens : []
    }
    /** Polls every node until check holds for its listing; the milliseconds that took, or undefined past 5 s. */
    const onEveryNode = async (what: string, check: (screens: any[]) => boolean): Promise<number | undefined> => {
      const started = performance.now()
      const all = await eventually(t, `every node ${what}`, () => Promise.all(cluster.nodes.map(async (n) => check(await listed(n.url)))), { within: 5000, every: 20, until: (held) => held.every(Boolean) })
      return all.every(Boolean) ? performance.now() - started : undefined
    }
    const mine = (screens: any[]) => screens.filter((s) => ids.has(s.screen_id))
    const seen = await onEveryNode('lists all 31 screens', (screens) => mine(screens).length === 31)
    t.not(seen, undefined, 'every node lists all 31 screens')
    t.comment(`31 screens registered through node-1 and node-2 listed by all three nodes ${(performance.now() - answeredAt).toFixed(0)} ms after the registrations answered`)

    const patched = await call(two.url, 'PATCH', `/v1/partner/screens/${single.body.data.screen_id as string}`, { key: partner, body: { floor_price_cpm: 42.5 } })
    t.equal(patched.status, 200, 'a floor changed through node-2')
    t.not(await onEveryNode('shows the new floor', (screens) => mine(screens).find((s) => s.screen_id === single.body.data.screen_id)?.floor_price_cpm === 42.5), undefined, 'every node\'s row shows the new floor')

    const measured = [...ids].slice(0, 5)
    const devices = await call(three.url, 'GET', '/v1/partner/devices?limit=100', { key: partner })
    const deviceOf = new Map<string, string>(devices.body.data.devices.map((d: { screen_id: string, device_id: string }) => [d.screen_id, d.device_id]))
    const updates = measured.map((id) => ({ device_id: deviceOf.get(id)!, live_face_count: 12, attention_score: 0.8, vas_seconds: 30, vas_plays: 2 }))
    const audience = await call(three.url, 'POST', '/v1/partner/audience', { key: partner, body: { updates } })
    t.equal(audience.status, 200, 'FEIN measured through node-3')
    const liveFirst = (screens: any[]) => {
      const top = mine(screens).slice(0, 5)
      return top.length === 5 && top.every((s) => s.data_quality === 'live' && measured.includes(s.screen_id))
    }
    t.not(await onEveryNode('lists the measured screens first, live', liveFirst), undefined, 'every node lists the measured screens first, live')

    // A walk through the front, ten screens a page, while FEIN moves screens through the order on every node.
    const walked: string[] = []
    let cursor: string | null = null
    let page = 0
    do {
      const r = await call(cluster.frontUrl, 'GET', `/openrtb/v2/adslots?format=screens&limit=10${cursor !== null ? `&cursor=${cursor}` : ''}`, { key: buyer })
      t.equal(r.status, 200, `page ${++page} through the front`)
      walked.push(...mine(r.body.data.screens).map((s: { screen_id: string }) => s.screen_id))
      cursor = r.body.data.cursor.next
      if (cursor !== null) t.match(cursor, /^node-\d\./, 'the cursor names the node that issued it')
      const moving = [...ids].slice(page * 3, page * 3 + 3).map((id) => ({ device_id: deviceOf.get(id)!, live_face_count: page, attention_score: 0.5, vas_seconds: 10 * page, vas_plays: 1 }))
      t.equal((await call(cluster.nodes[page % 3]!.url, 'POST', '/v1/partner/audience', { key: partner, body: { updates: moving } })).status, 200)
    } while (cursor !== null)
    t.equal(walked.length, 31, 'the walk saw 31 screens')
    t.equal(new Set(walked).size, 31, 'each once, while signals moved them')

    const first = await call(one.url, 'GET', '/openrtb/v2/adslots?format=screens&limit=5', { key: buyer })
    const elsewhere = await call(two.url, 'GET', `/openrtb/v2/adslots?format=screens&limit=5&cursor=${first.body.data.cursor.next as string}`, { key: buyer })
    t.match(elsewhere, { status: 400, body: { error_code: 'invalid_parameter', param: 'cursor', error: /node-1.*start the walk again/ } }, 'node-1\'s cursor sent to node-2 asks for a new walk')

    const token = single.body.data.embed_url.split('/embed/')[1] as string
    t.equal((await call(one.url, 'POST', `/embed/${token}/heartbeat`, { body: { fp: 'fp-one' } })).status, 200, 'a player page bound and heartbeating through node-1')
    const bound = async (base: string) => (await call(base, 'GET', '/v1/partner/devices?limit=100', { key: partner })).body.data.devices.find((d: { device_id: string }) => d.device_id === 'd-30')
    // The binding reaches the other nodes through the state bucket, the heartbeat through the signals: each in its
    // own moment, so both are waited for, on the node the next check goes through too.
    const shown = async (base: string) => await eventually(t, `${base} shows d-30 online and bound`, () => bound(base), { every: 0, until: (device) => device?.status === 'online' && device?.player_bound === true })
    t.match(await shown(three.url), { status: 'online', player_bound: true }, 'node-3 shows the device online and bound')
    t.match(await shown(two.url), { status: 'online', player_bound: true }, 'and so does node-2')
    t.match(await call(two.url, 'POST', `/embed/${token}/heartbeat`, { body: { fp: 'fp-two' } }), { status: 409, body: { error_code: 'device_mismatch' } }, 'another device is refused through node-2')
    // Heartbeats stop: node-1, which recorded the last one, takes the screen offline after HEARTBEAT_TIMEOUT_SECONDS
    // (5 s here); every node shows it.
    for (const node of cluster.nodes) {
      const shown = await eventually(t, `${node.id} shows the screen offline`, () => bound(node.url), { within: 20_000, every: 100, until: (d) => d?.status === 'offline' })
      t.equal(shown?.status, 'offline', `${node.id} shows the screen offline after HEARTBEAT_TIMEOUT_SECONDS`)
    }
    t.match(await call(three.url, 'PATCH', `/v1/partner/screens/${single.body.data.screen_id as string}`, { key: partner, body: { floor_price_cpm: -1 } }), { status: 400, body: { error: { param: 'floor_price_cpm' } } }, 'bad input on a cluster node answers as on one node')
    const floors = await Promise.all(cluster.nodes.map(async (n) => mine(await listed(n.url)).find((s) => s.screen_id === single.body.data.screen_id)?.floor_price_cpm))
    t.same(floors, [42.5, 42.5, 42.5], 'nothing written: every node still lists the floor set before, and goes on serving')

    t.equal((await call(two.url, 'PUT', '/admin/v1/settings', { key: cluster.adminToken, body: { partner_display: true } })).status, 200, 'the operator turns partner display on through node-2')
    for (const node of cluster.nodes) {
      const shown = await eventually(t, `${node.id} has the switch on`, async () => (await c.admin(node.url, 'GET', '/admin/v1/settings')).body.data.partner_display as boolean, { every: 0 })
      t.equal(shown, true, `${node.id} has the switch on`)
    }
  })

  t.test('a creative registered, uploaded and confirmed through three different nodes is moderated and served by every node', async (t) => {
    const [one, two, three] = c.nodes
    const made = await onboard(cluster.frontUrl, 'creative-buyer')
    const key = made.body.data.api_key.key as string
    // Room for the polling below on a busy machine, where moderation can take seconds.
    t.equal((await call(one.url, 'PUT', '/admin/v1/seats/creative-buyer/rate-limits', { key: cluster.adminToken, body: { limits: { creatives: 100000, inventory: 100000, account: 100000 }, reason: 'cluster test' } })).status, 200)
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

  t.test('a screen\'s proofs form one chain whichever node signs them, listed, counted and verified alike by every node', async (t) => {
    const [one, two, three] = c.nodes
    const ad = everywhereAd!
    // A screen's plays reported through node-1, node-2, node-3 and node-1 again, as when its player moves to another
    // node: each next node signs once it holds the proofs before (the engine had them before each answer).
    const signed: string[] = []
    let n = 0
    for (const node of [one, two, three, one]) {
      for (const id of signed) await eventually(t, `${node.id} holds proof ${id}`, async () => (await call(node.url, 'GET', `/v1/advertiser/proof/proofs/${id}`, { key: ad.key })).status, { every: 20, until: (s) => s === 200 })
      const impressions = [0, 1].map(() => ({ adId: ad.id, impressionId: `chain-imp-${++n}`, deviceId: 'd-6', duration: 15, completed: true, timestamp: Date.now() - 1000 + n }))
      const played = await call(node.url, 'POST', '/v1/partner/impressions', { key: screensPartner, body: { impressions } })
      t.match(played, { status: 200, body: { data: { accepted: 2 } } }, `two plays reported through ${node.id}`)
      signed.push(...(played.body.data.results as Array<{ proof_id: string }>).map((r) => r.proof_id))
    }
    const screenId = (await call(one.url, 'GET', `/v1/advertiser/proof/proofs/${signed[0]!}`, { key: ad.key })).body.data.screenId as string
    type Link = { proof_id: string, chain: { seq: number, prev_digest: string, digest: string } }
    const chainOn = async (base: string): Promise<Link[]> => ((await call(base, 'GET', `/v1/advertiser/proof/proofs?screen_id=${screenId}&limit=100`, { key: ad.key })).body.data.proofs as Link[]).sort((a, b) => a.chain.seq - b.chain.seq)
    const chains = await eventually(t, `every node lists the ${signed.length} proofs`, () => Promise.all(c.nodes.map((node) => chainOn(node.url))), { every: 50, until: (all) => all.every((x) => x.length === signed.length) })
    const chain = chains[0]!
    t.same(chain.map((p) => p.proof_id), signed, 'the eight proofs, signed by three nodes, in the order they were signed')
    t.same(chain.map((p) => p.chain.seq), [1, 2, 3, 4, 5, 6, 7, 8], 'one chain: consecutive sequence numbers')
    t.ok(chain.every((p, i) => i === 0 || p.chain.prev_digest === chain[i - 1]!.chain.digest), 'each proof chains from the one before, whichever node signed that one')
    t.same(chains.map((c) => JSON.stringify(c)), chains.map(() => JSON.stringify(chain)), 'every node lists the same chain')
    const last = (await call(three.url, 'GET', `/v1/advertiser/proof/proofs/${signed[signed.length - 1]!}`, { key: ad.key })).body.data
    const fields = { signature: last.signature, timestamp: last.timestamp, adId: last.adId, impressionId: last.impressionId, screenId: last.screenId, deviceId: last.deviceId }
    t.match(await call(two.url, 'POST', '/v1/advertiser/proof/verify-proof', { body: fields, headers: { 'x-forwarded-for': freshIp() } }), { status: 200, body: { verification: { valid: true } } }, 'node-1\'s last proof verifies on node-2')
    const today = new Date().toISOString().slice(0, 10)
    const counts = await Promise.all(cluster.nodes.slice(0, 3).map(async (node) => (await call(node.url, 'GET', `/openrtb/v2/proof-of-play?start_date=${today}&end_date=${today}&limit=1`, { key: ad.key })).body.data.counts))
    t.same(counts, counts.map(() => counts[0]), `the seat's proof-of-play counts are the same through every node: ${JSON.stringify(counts[0])}`)
    t.equal(counts[0].total, signed.length + 1, 'and count every node\'s proofs: these and the creative\'s first')
    t.match(await call(three.url, 'POST', '/v1/partner/impressions', { key: screensPartner, body: { impressions: [{ adId: ad.id, impressionId: 'chain-imp-1', deviceId: 'd-6', duration: 15, completed: true, timestamp: Date.now() }] } }), { status: 200, body: { data: { accepted: 0, duplicates: 1, results: [{ status: 'duplicate', proof_id: signed[0] }] } } }, 'an impression signed through node-1, reported again through node-3: a duplicate, its proof node-1\'s')
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

  t.test('a bid taken through one node wins the spot another node decides, and is settled once across the cluster', async (t) => {
    const [one, two, three] = c.nodes
    const receiver = await startReceiver(t, true)
    const { key, creativeId } = await approvedBidder(t, c, 'book-buyer', { approvedThrough: two.url, writesThrough: one.url })
    const devices = (await call(one.url, 'GET', '/v1/partner/devices?limit=100', { key: screensPartner })).body.data.devices as Array<{ device_id: string, screen_id: string, embed_url: string }>
    const screens = ['d-20', 'd-21', 'd-22'].map((id) => devices.find((d) => d.device_id === id)!)
    const requests = (await call(one.url, 'GET', '/openrtb/v2/adslots?format=openrtb&limit=100', { key })).body.data.bid_requests as Array<{ imp: Array<{ id: string }>, ext: { trb: { screen_id: string } } }>
    const impOf = (screenId: string) => requests.find((r) => r.ext.trb.screen_id === screenId)!.imp[0]!.id
    const notice = (kind: string, screenId: string) => `${receiver.url}/${kind}/${screenId}?price=\${AUCTION_PRICE}&loss=\${AUCTION_LOSS}`
    const bid = await call(one.url, 'POST', '/openrtb/v2/bid', { key, body: { id: 'book-1', seatbid: [{ bid: screens.map((d, i) => ({ id: `book-${i}`, impid: impOf(d.screen_id), price: 50, crid: creativeId, adm: '<b>book</b>', nurl: notice('win', d.screen_id), lurl: notice('loss', d.screen_id) })) }] } })
    t.match(bid, { status: 200, body: { data: { accepted: 3, rejected: 0 } } }, 'three bids, one a screen, taken through node-1 and acknowledged once the engine held them')

    // Each screen's spot decided by another node: d-20 by node-2, d-21 by node-3, d-22 by node-1 (which took them).
    const deciders = [two, three, one]
    const spotPath = (d: { embed_url: string }) => `${new URL(d.embed_url).pathname}/spots`
    const decided: string[] = []
    for (const [i, d] of screens.entries()) {
      const node = deciders[i]!
      // The bids reach the other nodes' books milliseconds after node-1's answer: a dry run looks without settling.
      await eventually(t, `${node.id}'s book has the bid for ${d.device_id}`, async () => (await call(node.url, 'POST', `${spotPath(d)}?dry_run=true`, { body: {} })).body.data?.tier, { every: 20, until: (tier) => tier === 'open_auction' })
      const spot = (await call(node.url, 'POST', spotPath(d), { body: {} })).body.data
      t.match(spot, { tier: 'open_auction', adm: '<b>book</b>', creative: { creative_id: creativeId } }, `${d.device_id}'s spot, decided by ${node.id}, is won by the bid node-1 took`)
      decided.push(spot.spot_id as string)
    }
    // Once settled by the node that decided, the bid is out of every node's book: no other node sells it again.
    for (const [i, d] of screens.entries()) {
      const tiers = await eventually(t, `${d.device_id}'s bid out of every node's book`, () => Promise.all(c.nodes.map(async (n) => (await call(n.url, 'POST', `${spotPath(d)}?dry_run=true`, { body: {} })).body.data?.tier as string)), { every: 20, until: (all) => !all.includes('open_auction') })
      t.notOk(tiers.includes('open_auction'), `${d.device_id}: no node finds the bid ${deciders[i]!.id} settled (tiers now ${tiers.join(', ')})`)
    }
    const winsIn = () => receiver.received.filter((r) => r.path.startsWith('/win/'))
    await eventually(t, 'three win notices at the receiver', winsIn, { every: 50, until: (w) => w.length >= 3 })
    // Half a second more, in which a second notice for any bid would arrive.
    await pause(500)
    const wins = winsIn()
    t.same(wins.map((r) => r.path).sort(), screens.map((d) => `/win/${d.screen_id}`).sort(), 'one win notice a bid, sent by the node that decided its spot')
    t.ok(wins.every((r) => Number(r.query.get('price')) > 0), 'each with its clearing price')
    t.same(receiver.received.filter((r) => r.path.startsWith('/loss/')).map((r) => r.path), [], 'and no loss notice for any of them')
    t.equal(decided.length, 3)
    // Counted where they happened (the bids on node-1, each win on the node that decided it), shown alike by every node.
    const counters = async (base: string) => {
      const d = (await call(base, 'GET', '/openrtb/v2/stats', { key })).body.data
      return { bids: d.bids, accepted: d.accepted, wins: d.wins }
    }
    const shown = await eventually(t, 'every node counts the 3 wins', () => Promise.all(c.nodes.map((n) => counters(n.url))), { every: 50, until: (all) => all.every((x) => x.wins === 3) })
    t.same(shown, shown.map(() => ({ bids: 3, accepted: 3, wins: 3 })), 'GET /stats through every node: 3 bids, 3 accepted, 3 wins, each node\'s counters summed')
  })

  t.test('the whole marketplace loop through the front: onboard, creative, bid, spot, play, proof and report', async (t) => {
    const front = cluster.frontUrl
    const key = (await onboard(front, 'loop-buyer')).body.data.api_key.key as string
    t.equal((await call(front, 'POST', '/admin/v1/seats/loop-buyer/approve', { key: cluster.adminToken, body: {} })).status, 200, 'onboarded and approved through the front')
    t.equal((await call(front, 'PUT', '/admin/v1/seats/loop-buyer/rate-limits', { key: cluster.adminToken, body: { limits: { inventory: 100000, bidding: 100000, creatives: 100000, account: 100000 }, reason: 'cluster test' } })).status, 200)
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
