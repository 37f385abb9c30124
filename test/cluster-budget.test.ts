import { connect } from 'nats'
import t from 'tap'
import { FUNNEL_STREAM } from '../src/cluster/funnel-stream.js'
import { analyticsPidOf, approveCreative, clusterAvailable, gymScreens, startTestCluster, type ClusterScreens } from './helpers/cluster.js'
import { pauseFor } from '../scripts/lib/faults/pause.js'
import { eventually, pause } from './helpers/eventually.js'

// Money spent by many nodes (test/helpers/cluster.ts starts the cluster): a campaign's budget spent exactly, each node
// spending only the parts the engine granted it, one node frozen with SIGSTOP on the way, every funnel event counted once in ClickHouse whichever node logged
// it, analytics processes killed on the way, and an agent's guaranteed buy over screens of many partitions booked
// all or nothing through the logs.

if (clusterAvailable(t)) {
  const c = await startTestCluster(t)
  const { cluster, call, onboard, sharedClickHouse } = c
  let screens: ClusterScreens
  /** The buyer whose $5 campaign the nodes spend. */
  const ad = { key: '' }
  let ids = 0
  /** Calls an MCP tool as the buyer through a node. */
  const tool = async (base: string, name: string, args: Record<string, unknown>, query = '') => {
    const res = await fetch(`${base}/mcp${query}`, { method: 'POST', headers: { authorization: `Bearer ${ad.key}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' }, body: JSON.stringify({ jsonrpc: '2.0', id: ++ids, method: 'tools/call', params: { name, arguments: args } }) })
    const body = await res.json() as any
    return { status: res.status, data: body.result?.structuredContent, error: body.result?.isError === true }
  }
  t.test('the setting: an operator\'s 31 screens, five of them measured, one priced high, a buyer', async (t) => {
    screens = await gymScreens(t, c)
    // A floor of $42.50 on one screen prices the gyms' preferred product at $46.75 CPM: the budget goes in a few plays.
    const d30 = screens.devices.find((d) => d.device_id === 'd-30')!.screen_id
    t.equal((await call(c.nodes[1].url, 'PATCH', `/v1/partner/screens/${d30}`, { key: screens.partner, body: { floor_price_cpm: 42.5 } })).status, 200)
    // Twelve people a play on the five measured screens, the three played below among them.
    const updates = ['d-0', 'd-1', 'd-2', 'd-3', 'd-4'].map((device_id) => ({ device_id, live_face_count: 12, attention_score: 0.8, vas_seconds: 30, vas_plays: 2 }))
    t.equal((await call(c.nodes[2].url, 'POST', '/v1/partner/audience', { key: screens.partner, body: { updates } })).status, 200, 'FEIN measured through node-3')
    const made = await onboard(cluster.frontUrl, 'creative-buyer')
    t.equal(made.status, 201)
    ad.key = made.body.data.api_key.key as string
  })
  /** The plays of the $5 campaign below, all of its seat's: what every node's reports must count once. */
  let leasePlays: number | undefined

  t.test('a campaign played through three nodes at once spends exactly its budget, one of them frozen for a while: each node spends only the parts granted to it', async (t) => {
    const [one, two, three] = c.nodes
    t.equal((await call(one.url, 'PUT', '/admin/v1/seats/creative-buyer/rate-limits', { key: cluster.adminToken, body: { limits: { campaigns: 100000, creatives: 100000, inventory: 100000 }, reason: 'cluster test polls every node' } })).status, 200)
    const products = (await tool(one.url, 'get_products', { brief: 'gyms in Austin' })).data.products as Array<{ product_id: string }>
    const preferred = products.find((p) => p.product_id.endsWith(':preferred'))
    t.ok(preferred !== undefined, 'a preferred product of the Austin gyms')
    // The least a preferred package on the 31 screens takes for one day: a spot on each at the product's price.
    const budget = 5
    // A flight over two UTC days would spread the budget over both, so it ends by midnight; in the day's last minutes, it waits for the next.
    const midnight = () => new Date(new Date().toISOString().slice(0, 10)).getTime() + 86_400_000
    if (midnight() - Date.now() < 180_000) await pause(midnight() - Date.now() + 1000)
    const made = await tool(two.url, 'create_media_buy', {
      buyer_ref: 'leases', start_time: 'asap', end_time: new Date(Math.min(Date.now() + 2 * 3_600_000, midnight() - 1000)).toISOString(),
      packages: [{ buyer_ref: 'p', product_id: preferred!.product_id, pricing_option_id: 'cpm_fixed', budget, pacing: 'asap', creatives: [{ creative_id: 'lease-ad', name: 'Lease ad', assets: { primary: { url: 'https://assets.invalid/lease.png' } } }] }]
    })
    t.equal(made.error, false, `a media buy made through node-2 (${JSON.stringify(made.data?.errors ?? '')})`)
    const creativeId = async () => ((await call(three.url, 'GET', '/openrtb/v2/creatives?limit=100', { key: ad.key })).body.data.creatives as Array<{ creative_id: string, crid?: string, status: string }>).find((c) => c.crid === 'lease-ad')
    const creative = await eventually(t, 'the buy\'s creative moderated', creativeId, { every: 100, until: (c) => c !== undefined && c.status !== 'pending_moderation' })
    if (creative!.status !== 'approved') t.ok(await approveCreative(t, c, three.url, creative!.creative_id), 'its creative approved through node-3')
    // Once approved, one node's catalog job activates the package: a campaign and a preferred placement.
    const placement = await eventually(t, 'the package placed', async () => (await call(one.url, 'GET', '/openrtb/v2/assignments?limit=100', { key: ad.key })).body.data.assignments.find((a: { line?: string, source: string }) => a.line === 'preferred' && a.source === 'media_buy') as { campaign_id: string } | undefined, { every: 100 })
    t.ok(placement !== undefined, 'the package is placed once its creative is approved')
    const campaignOf = async (base: string) => (await call(base, 'GET', `/openrtb/v2/campaigns/${placement!.campaign_id}`, { key: ad.key })).body.data as { status: string, spent_usd: number, impressions: number, completed_reason?: string }

    // Three screens' players, each through its own node, ask for spots at the same moment and play what they get.
    const embeds = ['d-0', 'd-1', 'd-2'].map((id) => new URL(screens!.devices.find((d) => d.device_id === id)!.embed_url).pathname)
    // Each node's players pick the new placement up within PICKUP_SECONDS (1 s here): a dry run decides without settling.
    for (const [i, node] of c.nodes.entries()) await eventually(t, `${node.id}'s screen plays the package`, async () => (await call(node.url, 'POST', `${embeds[i]!}/spots?dry_run=true`, { body: {} })).body.data?.tier, { until: (tier) => tier === 'preferred' })
    const via = new Map<string, number>()
    const tiers = new Set<string>()
    // Until the campaign has spent its budget: a node that has spent its part asks for the next, and plays nothing until
    // the engine grants it.
    let round = 0
    let frozen: { plays: number } | undefined
    const playRound = async (nodes: Array<{ id: string, url: string }> = c.nodes) => {
      // node-2's analytics process killed while the plays' events flow through the funnel stream (counted in the next test).
      if (++round === 3) process.kill(analyticsPidOf(two.pid!)!, 'SIGKILL')
      // Once node-3 holds a part of the budget, it is frozen past its logs' lease while the others play on: what it
      // holds is granted to nobody else, so they cannot spend the budget without it, and it spends its part once woken.
      if (round === 2 && frozen === undefined) {
        frozen = { plays: 0 }
        const until = performance.now() + 12_000
        await pauseFor(three.pid!, 12_000, async () => {
          while (performance.now() < until) {
            const before = (via.get(one.id) ?? 0) + (via.get(two.id) ?? 0)
            await playRound([one, two])
            frozen!.plays += (via.get(one.id) ?? 0) + (via.get(two.id) ?? 0) - before
          }
        })
      }
      const played = await Promise.all(nodes.map(async (node) => {
        const i = c.nodes.findIndex((n) => n.id === node.id)
        const spot = (await call(node.url, 'POST', `${embeds[i]!}/spots`, { body: {} })).body.data
        tiers.add(String(spot?.tier))
        if (spot?.tier !== 'preferred') return false
        await call(node.url, 'POST', `${embeds[i]!}/spots/${spot.spot_id as string}/events`, { body: { event: 'render_started' } })
        const done = await call(node.url, 'POST', `${embeds[i]!}/spots/${spot.spot_id as string}/events`, { body: { event: 'play_completed', duration_ms: 15_000 } })
        if (done.status !== 200) t.fail(`round ${round}: a play through ${node.id} answered ${done.status}`)
        via.set(node.id, (via.get(node.id) ?? 0) + 1)
        return true
      }))
      if (!played.some(Boolean)) await pause(100)
      return await campaignOf(one.url)
    }
    await eventually(t, 'the campaign completed, played on three screens through three nodes', playRound, { within: 60_000, every: 0, until: (campaign) => campaign.status === 'completed' })
    t.equal(via.size, 3, `every node played it: ${[...via].map(([id, n]) => `${id} ${n}`).join(', ')} (tiers seen: ${[...tiers].join(', ')})`)
    t.comment(`node-1 and node-2 played ${frozen?.plays ?? 0} times while node-3 was frozen for 12 s`)
    const shown = await eventually(t, 'every node shows the campaign completed, alike', () => Promise.all([one, two, three].map((n) => campaignOf(n.url))), { every: 100, until: (all) => all.every((c) => c.status === 'completed' && c.spent_usd === all[0]!.spent_usd) })
    t.same(shown.map((c) => c.spent_usd), [budget, budget, budget], `spent exactly its $${budget} budget over ${[...via.values()].reduce((a, b) => a + b, 0)} plays on three nodes, never more, shown by every node`)
    t.same(shown.map((c) => [c.status, c.completed_reason]), [['completed', 'budget spent'], ['completed', 'budget spent'], ['completed', 'budget spent']], 'completed once its budget was spent, on every node')
    leasePlays = [...via.values()].reduce((a, b) => a + b, 0)
  })

  t.test('every funnel event reaches each node\'s ClickHouse exactly once, whichever node logged it, analytics processes killed on the way', async (t) => {
    const plays = leasePlays!
    t.equal((await c.admin(c.nodes[0].url, 'PUT', '/admin/v1/seats/creative-buyer/rate-limits', { limits: { reporting: 100000 }, reason: 'cluster test polls its reports' })).status, 200)
    // node-1's too, after its events were loaded: a restarted loader asks ClickHouse before loading what it may hold.
    process.kill(analyticsPidOf(c.nodes[0].pid!)!, 'SIGKILL')
    const summaries = () => Promise.all(c.nodes.map(async (n) => {
      const r = await call(n.url, 'GET', '/openrtb/v2/reports/summary', { key: ad.key })
      return { status: r.status, ...r.body.data } as { status: number, plays?: number, spend_usd?: number }
    }))
    const shown = await eventually(t, `${plays} plays and $5 in every node's report`, summaries, { within: 60_000, every: 250, until: (all) => all.every((s) => s.plays === plays && s.spend_usd === 5) })
    t.same(shown.map((s) => [s.status, s.plays, s.spend_usd]), [[200, plays, 5], [200, plays, 5], [200, plays, 5]], `the ${plays} plays logged by three nodes and their $5, counted once in ${sharedClickHouse !== undefined ? 'the ClickHouse server they share' : 'each node\'s ClickHouse'}`)

    const nc = await connect({ servers: cluster.engine.urls })
    t.teardown(() => nc.close())
    const jsm = await nc.jetstreamManager()
    if (sharedClickHouse !== undefined) {
      // Nodes sharing one ClickHouse ship their own events there, as a node alone does: none goes through the engine.
      t.equal(await jsm.streams.info(FUNNEL_STREAM).then(() => 'made', () => 'absent'), 'absent', 'no funnel stream: each node loaded its own events into the server, once')
      return
    }
    // Every message of the stream sent again under new ids, as by nodes that lost the engine's acknowledgements of
    // their whole logs: each loader finds those events in its ClickHouse and loads none of them twice.
    const js = nc.jetstream()
    const { state } = await jsm.streams.info(FUNNEL_STREAM)
    let resent = 0
    for (let seq = state.first_seq; seq <= state.last_seq; seq++) {
      const m = await jsm.streams.getMessage(FUNNEL_STREAM, { seq })
      await js.publish(m.subject, m.data, { msgID: `again.${seq}` })
      resent++
    }
    await eventually(t, 'every loader has taken in the stream sent again', () => jsm.consumers.list(FUNNEL_STREAM).next(), { within: 30_000, every: 100, until: (consumers) => consumers.length === 3 && consumers.every((x) => x.num_pending === 0 && x.num_ack_pending === 0) })
    // With REPORT_CACHE_SECONDS=0 a report is computed again on each request, and served as last computed meanwhile.
    const summaryOf = async (base: string) => (await call(base, 'GET', '/openrtb/v2/reports/summary', { key: ad.key })).body.data
    await Promise.all(c.nodes.map((n) => summaryOf(n.url)))
    await pause(1000)
    const again = await Promise.all(c.nodes.map((n) => summaryOf(n.url)))
    t.same(again.map((s) => [s.plays, s.spend_usd]), [[plays, 5], [plays, 5], [plays, 5]], `the stream's ${resent} messages sent again and loaded by every node: still ${plays} plays and $5 on each`)
  })

  t.test('an agent\'s guaranteed buy over 31 screens in many partitions books through the logs, every node shows it, and its change rebooks it', async (t) => {
    const [one, two, three] = c.nodes
    const products = (await tool(one.url, 'get_products', { brief: 'gyms in Austin' })).data.products as Array<{ product_id: string }>
    const guaranteed = products.find((p) => p.product_id.endsWith(':guaranteed'))!
    const tomorrow = new Date(Date.now() + 86_400_000).toISOString().slice(0, 10)
    const screenIds = screens.devices.map((d) => d.screen_id)
    /** Spots booked tomorrow on each of the 31 screens, as a node shows them. */
    const bookedVia = async (base: string) => {
      const res = await call(base, 'POST', '/openrtb/v2/screens/availability', { key: ad.key, body: { screen_ids: screenIds, start_date: tomorrow, end_date: tomorrow } })
      if (res.status !== 200) throw new Error(`availability through ${base} answered ${res.status}: ${JSON.stringify(res.body)}`)
      return (res.body.data.screens as Array<{ periods: Array<{ booked: number }> }>).map((s) => s.periods[0]!.booked)
    }
    const before = await bookedVia(one.url)
    const made = await tool(two.url, 'create_media_buy', {
      buyer_ref: 'guaranteed-everywhere', start_time: `${tomorrow}T00:00:00Z`, end_time: `${tomorrow}T23:59:00Z`,
      packages: [{ buyer_ref: 'g', product_id: guaranteed.product_id, pricing_option_id: 'cpm_fixed', budget: 300 }]
    })
    t.equal(made.error, false, `a guaranteed buy made through node-2 (${JSON.stringify(made.data?.errors ?? '')})`)
    const buyId = made.data.media_buy_id as string
    const booked = await eventually(t, 'every node shows the buy\'s spots on every screen', () => Promise.all([one, two, three].map((n) => bookedVia(n.url))), { every: 100, until: (all) => all.every((b) => JSON.stringify(b) === JSON.stringify(all[0])) && all[0]!.some((x, i) => x > before[i]!) })
    const added = booked[0]!.map((x, i) => x - before[i]!)
    t.ok(added.every((x) => x === added[0]) && added[0]! > 0, `${added[0]} spots a day booked on each of the 31 screens, the same on every node`)
    const tried = await tool(three.url, 'update_media_buy', { media_buy_id: buyId, packages: [{ package_id: 'pkg-0', budget: 600 }] }, '?dry_run=true')
    t.equal(tried.error, false, 'the change tried first as a dry run through node-3')
    t.same(await bookedVia(three.url), booked[0], 'a dry run books and gives back nothing: node-3 shows the buy as it was')
    // A change the logs could not decide within the ack timeout is answered service_unavailable, and an agent tries it
    // again, as its Retry-After says (seen once in a loaded full run).
    const undecided = (r: { error: boolean, data?: { errors?: Array<{ code: string }> } }) => r.error && r.data?.errors?.every((e) => e.code === 'service_unavailable') === true
    const changed = await eventually(t, 'the change answered, not as undecided', () => tool(three.url, 'update_media_buy', { media_buy_id: buyId, packages: [{ package_id: 'pkg-0', budget: 600 }] }), { within: 10_000, every: 1000, until: (r) => !undecided(r) })
    t.equal(changed.error, false, `its budget doubled through node-3 (${JSON.stringify(changed.data?.errors ?? '')})`)
    const rebooked = await eventually(t, 'every node shows the buy booked again', () => Promise.all([one, two, three].map((n) => bookedVia(n.url))), { every: 100, until: (all) => all.every((b) => JSON.stringify(b) === JSON.stringify(all[0])) && all[0]![0]! - before[0]! !== added[0] })
    const now = rebooked[0]!.map((x, i) => x - before[i]!)
    t.ok(now.every((x) => x === now[0]) && now[0]! > added[0]!, `booked again at ${now[0]} spots a day on each screen, its first ${added[0]} given back: the same on every node`)
  })
}
