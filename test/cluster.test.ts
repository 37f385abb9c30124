import t from 'tap'
import { clusterAvailable, everyNode, startTestCluster } from './helpers/cluster.js'
import { eventually, pause } from './helpers/eventually.js'
import { freshIp } from './helpers/service.js'

// What a cluster keeps right (test/helpers/cluster.ts starts it): seats, keys and idempotency through any node, one
// winner of every race, a rate limit held cluster-wide, and screens registered, changed and measured through any node.
// test/cluster-market.test.ts has the marketplace on such screens.

if (clusterAvailable(t)) {
  const c = await startTestCluster(t)
  const { cluster, call, onboard, seatStatus } = c

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
    // Minted through node-1 and node-2, the keys reach node-3 milliseconds after their answers (one full run listed 8).
    const listed = await eventually(t, 'node-3 lists the seat\'s keys', async () => (await call(cluster.nodes[2]!.url, 'GET', '/openrtb/v2/keys', { key })).body.data.keys as Array<{ key_id: string }>, { every: 10, until: (keys) => keys.length >= 11 })
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
    // The other is refused: 409 when it ran while its own key still worked (the seat's last live key), 401 when the
    // first revocation reached its node before it was admitted (its own key revoked; seen under a loaded full run).
    const [went, refused] = revoked.map((r) => r.status).sort()
    t.ok(went === 200 && (refused === 409 || refused === 401), 'one revocation went through; the other was refused, finding the last live key or its own key revoked', { bodies: revoked.map((r) => r.body) })
    // node-3 learns of the revocation a moment after the engine acknowledged it: one key stays live there, never none.
    const live = await eventually(t, 'node-3 has the revocation', async () => (await Promise.all(keys.map((k) => seatStatus(cluster.nodes[2]!.url, k)))).sort(), { until: (l) => l[0] === 200 && l[1] === 401 })
    t.same(live, [200, 401], 'the seat keeps one live key')
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
    const partner = registered.body.data.api_key.key as string
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
}
