import t, { type Test } from 'tap'
import { pauseFor } from '../scripts/lib/faults/pause.js'
import { partitionOf } from '../src/cluster/screen-partitions.js'
import { approvedBidder, clusterAvailable, gymScreens, PARTITIONS, startTestCluster, untilServed, type ClusterScreens } from './helpers/cluster.js'
import { eventually, pause } from './helpers/eventually.js'
import { startReceiver, type Receiver } from './helpers/receiver.js'

// Issue 47's fault suite, spots: a screen's owner frozen with SIGSTOP past its lease while its player asks it for
// spots back to back, another player asks through another node (forwarded to whichever node owns the screen), and a
// DSP bids on the screen through that node all along. The owner's partition moves while it sleeps; woken, it must
// not decide from the book it held before the pause. Every spot answered with a bid is recorded, and every win
// notice the DSP receives: no bid may win two spots, and every win is told. Before spots were decided under a lease
// (3dfc20d), three such pauses sold 11 bids twice, each told twice.

/** Past the 10 s lease of a partition's log, with room for its takeover. */
const PAUSE_MS = 15_000
const ROUNDS = 2

interface Tally { wins: Map<number, number>, bids: number, onOwner: number, elsewhere: number, refusedOnOwner: number }

/** One round: a screen of d-20 on, its owner paused while the clients run, woken, then five seconds more. */
async function pausedRound (t: Test, c: Awaited<ReturnType<typeof startTestCluster>>, fleet: ClusterScreens, buyer: { key: string, creativeId: string }, receiver: Receiver, round: number, tally: Tally): Promise<void> {
  const served = await untilServed(t, c, c.nodes, 'every node owning some partitions', (all) => all.every((ps) => ps.length > 0))
  const ownerOf = (screenId: string) => c.nodes[served.findIndex((ps) => ps.includes(partitionOf(screenId, PARTITIONS)))]!
  const device = fleet.devices.find((d) => d.device_id === `d-${20 + round}`)!
  const owner = ownerOf(device.screen_id)
  const other = c.nodes.find((n) => n !== owner)!
  const requests = (await c.call(other.url, 'GET', '/openrtb/v2/adslots?format=openrtb&limit=100', { key: buyer.key })).body.data.bid_requests as Array<{ imp: Array<{ id: string }>, ext: { trb: { screen_id: string } } }>
  const imp = requests.find((r) => r.ext.trb.screen_id === device.screen_id)!.imp[0]!.id
  const spots = `${new URL(device.embed_url).pathname}/spots`
  let stopped = false
  let n = round * 1_000_000
  // Each bid replaces the seat's last on the imp, its number in its markup and its win notice.
  const bidder = async () => {
    while (!stopped) {
      const k = ++n
      const r = await c.call(other.url, 'POST', '/openrtb/v2/bid', { key: buyer.key, body: { id: `pause-${k}`, seatbid: [{ bid: [{ id: `pause-${k}`, impid: imp, price: 40, crid: buyer.creativeId, adm: `<b>${k}</b>`, nurl: `${receiver.url}/win/${k}?price=\${AUCTION_PRICE}` }] }] } }).catch(() => undefined)
      if (r?.status === 200 && r.body.data.accepted === 1) tally.bids++
    }
  }
  const player = async (base: string, onOwner: boolean) => {
    while (!stopped) {
      const r = await c.call(base, 'POST', spots, { body: {} }).catch(() => undefined)
      if (r?.status === 201 && r.body.data.tier === 'open_auction') {
        const k = Number(/<b>(\d+)<\/b>/.exec(String(r.body.data.adm))?.[1])
        tally.wins.set(k, (tally.wins.get(k) ?? 0) + 1)
        if (onOwner) tally.onOwner++
        else tally.elsewhere++
      } else if (onOwner && r?.status === 503) tally.refusedOnOwner++
    }
  }
  const clients = [bidder(), player(owner.url, true), player(other.url, false)]
  await pause(3000)
  const { stoppedMs } = await pauseFor(owner.pid!, PAUSE_MS)
  await pause(5000)
  stopped = true
  await Promise.all(clients)
  t.comment(`round ${round + 1}: ${device.device_id}'s owner ${owner.id} stopped ${Math.round(stoppedMs)} ms, its player asking it and another through ${other.id}`)
}

if (clusterAvailable(t)) {
  const c = await startTestCluster(t, { callTimeoutMs: 60_000 })

  t.test(`a screen's owner frozen with SIGSTOP for ${PAUSE_MS / 1000} s while players ask for its spots through it and through another node and a DSP bids: no bid won twice, every win told`, async (t) => {
    const receiver = await startReceiver(t, true)
    const fleet = await gymScreens(t, c)
    const buyer = await approvedBidder(t, c, 'pause-buyer', { approvedThrough: c.nodes[0].url, writesThrough: c.nodes[0].url })
    const tally: Tally = { wins: new Map(), bids: 0, onOwner: 0, elsewhere: 0, refusedOnOwner: 0 }
    for (const round of Array.from({ length: ROUNDS }, (_, i) => i)) await pausedRound(t, c, fleet, buyer, receiver, round, tally)
    t.ok(tally.elsewhere > 0 && tally.onOwner > 0, `spots won through the owner (${tally.onOwner}) and through another node (${tally.elsewhere})`)
    t.ok(tally.refusedOnOwner > 0, `woken, the owner refused ${tally.refusedOnOwner} spots (503) rather than decide them from the book it held before the pause`)
    const twice = [...tally.wins].filter(([, k]) => k > 1).map(([bid, k]) => `bid ${bid} won ${k} spots`)
    t.same(twice, [], 'no bid won two spots')
    const told = () => {
      const notices = new Map<string, number>()
      for (const r of receiver.received) if (r.path.startsWith('/win/')) notices.set(r.path, (notices.get(r.path) ?? 0) + 1)
      return notices
    }
    const notices = await eventually(t, 'a win notice for every bid won', told, { within: 30_000, every: 200, until: (m) => [...tally.wins.keys()].every((k) => m.has(`/win/${k}`)) })
    t.ok([...tally.wins.keys()].every((k) => notices.has(`/win/${k}`)), 'every bid won is told its win')
    // Notices go at least once: a sender stopped mid-delivery times it out when it wakes (its timers run before it
    // reads the answer waiting on its socket) and sends it again. What is counted here is how often.
    await pause(1000)
    const again = [...told()].filter(([, k]) => k > 1).length
    t.comment(`checked ${tally.bids} acknowledged bids, ${tally.wins.size} spots won (${tally.onOwner} through the owner, ${tally.elsewhere} through another node), ${tally.refusedOnOwner} refused by the woken owner, over ${ROUNDS} pauses: ${twice.length} bids won twice; ${again} win notices delivered again`)
  })
}
