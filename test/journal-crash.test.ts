import type { ChildProcess } from 'node:child_process'
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import autocannon from 'autocannon'
import t from 'tap'
import { acceptedBid } from '../bench/lib/bid-fixture.js'
import { pause } from './helpers/eventually.js'
import { startProcess, stopsCleanly } from './helpers/process.js'

// kill -9 of the service under load, in its own process (test/lifecycle.test.ts has shutdown and the durability of
// plain writes): what the hot threads acknowledged from their journals is there at the next start.

/** A service in its own process with an approved seat and one accepted bid (bench/lib/bid-fixture.ts), to kill -9. */
async function crashable (t: { teardown (fn: () => unknown): void }, name: string) {
  const dataDir = mkdtempSync(join(tmpdir(), `oohbid-${name}-crash-`))
  const fleet = `${dataDir}-fleet.json`
  t.teardown(() => { rmSync(dataDir, { recursive: true, force: true }); rmSync(fleet, { force: true }) })
  const first = await startProcess(dataDir, { BID_TTL_SECONDS: '86400' })
  const exited = new Promise((resolve) => first.child.once('exit', resolve))
  const { key, body } = await acceptedBid({ url: first.url, adminToken: 'crash-admin' }, fleet)
  return { dataDir, fleet, first, exited, body, headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' } }
}

/** Kills the service with SIGKILL after ms, answering how many entries its hot threads had journaled by then. */
async function killAfter (service: { url: string, child: ChildProcess }, ms: number): Promise<number> {
  await pause(ms)
  const journaled = await fetch(`${service.url}/metrics`).then(async (r) => Number(/oohbid_journal_entries_total\{applied="journaled"\} (\d+)/.exec(await r.text())?.[1] ?? 0), () => 0)
  service.child.kill('SIGKILL')
  return journaled
}

// Bids are acknowledged once in the hot thread's journal and applied to LMDB at the end of its turn
// (src/store/journal.ts): a kill -9 between the two must cost nothing, whichever thread took the bid. Pipelined
// clients keep every thread mid-turn, its answers written and its journal not yet applied, when the kill lands.
t.test('kill -9 under bid load loses no acknowledged bid: the journals are replayed at the next start', async (t) => {
  const { dataDir, first, exited, body, headers } = await crashable(t, 'bid')
  const load = autocannon({ url: `${first.url}/openrtb/v2/bid`, method: 'POST', headers, body, connections: 32, pipelining: 10, duration: 4 })
  const journaled = await killAfter(first, 2000)
  const result = await load
  await exited
  // The fixture's own bid was accepted too; autocannon counts an answer once it has read all of it.
  const acknowledged = result['2xx'] + 1
  t.ok(journaled > 0, `${journaled} bids were journaled before the kill, not committed at once`)
  t.ok(readdirSync(join(dataDir, 'journal')).length > 0, 'the kill left journal files to replay')
  const second = await startProcess(dataDir, { LOG_LEVEL: 'info' })
  t.teardown(() => { second.child.kill('SIGKILL') })
  const stats = (await fetch(`${second.url}/openrtb/v2/stats`, { headers }).then((r) => r.json()) as { data: { bids: number, accepted: number } }).data
  t.ok(stats.accepted >= acknowledged, `every acknowledged bid is counted: ${stats.accepted} counted, ${acknowledged} acknowledged`)
  t.ok(stats.accepted <= result.requests.sent + 1, `and none twice: at most the ${result.requests.sent + 1} sent`)
  t.equal(stats.bids, stats.accepted, 'every bid was accepted')
  t.comment(`${/"entries":(\d+)/.exec(second.stdout() + second.stderr())?.[1] ?? 'no'} entries replayed from the journals`)
  await stopsCleanly(t, second)
})

// Spot decisions are journaled too, with what they settle (src/player/feed.ts): the spot, its bids out of the book,
// the win in the seat's stats. Bids keep coming while players ask, so auctions keep being decided when the kill lands.
t.test('kill -9 under spot decisions loses no acknowledged auction: its spot and its win are there after the restart', async (t) => {
  const { dataDir, fleet, first, exited, body, headers } = await crashable(t, 'spot')
  const template = JSON.parse(body)
  const offers = (await fetch(`${first.url}/openrtb/v2/adslots?format=openrtb&limit=50`, { headers }).then((r) => r.json()) as { data: { bid_requests: Array<{ imp: Array<{ id: string, bidfloor: number }>, ext: { trb: { screen_id: string } } }> } }).data.bid_requests
  // The players' embed pages, from their partners' device lists (the simulator keeps the partners' keys). Not from
  // LMDB: a process that opens the environment beside the service's commits can break it (src/store/open-beside.ts).
  const tokens = new Map<string, string>()
  for (const partner of (JSON.parse(readFileSync(fleet, 'utf8')) as { partners: Array<{ key: string }> }).partners) {
    const devices = (await fetch(`${first.url}/v1/partner/devices?limit=100`, { headers: { authorization: `Bearer ${partner.key}` } }).then((r) => r.json()) as { data: { devices: Array<{ screen_id: string, embed_url: string }> } }).data.devices
    for (const d of devices) tokens.set(d.screen_id, new URL(d.embed_url).pathname)
  }
  // The screens open at this hour (a dry run shows the decision), each bid on again and again by the seat.
  const player = (i: number) => ({ 'content-type': 'application/json', 'x-forwarded-for': `10.9.0.${i % 250}` })
  const open: Array<{ path: string, bid: string }> = []
  for (const [i, offer] of offers.entries()) {
    const embed = tokens.get(offer.ext.trb.screen_id)
    if (embed === undefined) continue
    const bid = JSON.stringify({ ...template, id: `crash-${i}`, seatbid: [{ ...template.seatbid[0], bid: [{ ...template.seatbid[0].bid[0], id: `crash-bid-${i}`, impid: offer.imp[0]!.id, price: offer.imp[0]!.bidfloor + 1 }] }] })
    await fetch(`${first.url}/openrtb/v2/bid`, { method: 'POST', headers, body: bid })
    const dry = await fetch(`${first.url}${embed}/spots?dry_run=true`, { method: 'POST', headers: player(i), body: '{}' }).then((r) => r.json()) as { data?: { tier: string } }
    if (dry.data?.tier === 'open_auction') open.push({ path: `${embed}/spots`, bid })
  }
  t.ok(open.length >= 5, `${open.length} screens open now, each with a stored bid`)
  const auctions = new Set<string>()
  let next = 0
  const spots = autocannon({
    url: first.url,
    connections: 16,
    pipelining: 10,
    duration: 4,
    requests: [{
      method: 'POST',
      body: '{}',
      setupRequest: (req) => { const i = next++ % open.length; return { ...req, path: open[i]!.path, headers: player(i) } },
      onResponse: (status, text) => {
        const spot = status === 201 ? JSON.parse(text).data : undefined
        if (spot?.tier === 'open_auction') auctions.add(`${spot.events_url as string}`)
      }
    }]
  })
  let b = 0
  const bids = autocannon({ url: `${first.url}/openrtb/v2/bid`, connections: 4, pipelining: 10, duration: 4, requests: [{ method: 'POST', headers, setupRequest: (req) => ({ ...req, body: open[b++ % open.length]!.bid }) }] })
  const journaled = await killAfter(first, 2000)
  await Promise.all([spots, bids])
  await exited
  t.ok(auctions.size > 0, `${auctions.size} auctions acknowledged before the kill`)
  t.ok(journaled > 0, `${journaled} bids and spots were journaled before the kill, not committed at once`)
  t.ok(readdirSync(join(dataDir, 'journal')).length > 0, 'the kill left journal files to replay')
  const second = await startProcess(dataDir, { LOG_LEVEL: 'info' })
  t.comment(`${/"entries":(\d+)/.exec(second.stdout() + second.stderr())?.[1] ?? 'no'} entries replayed from the journals`)
  t.teardown(() => { second.child.kill('SIGKILL') })
  const missing: string[] = []
  const list = [...auctions]
  for (let i = 0; i < list.length; i += 20) {
    await Promise.all(list.slice(i, i + 20).map(async (events) => {
      const path = new URL(events).pathname
      const r = await fetch(`${second.url}${path}`, { method: 'POST', headers: player(0), body: JSON.stringify({ event: 'render_started' }) })
      if (r.status === 404) missing.push(path)
    }))
  }
  t.same(missing, [], `each of the ${auctions.size} acknowledged auctions' spots is there`)
  const stats = (await fetch(`${second.url}/openrtb/v2/stats`, { headers }).then((r) => r.json()) as { data: { wins: number, accepted: number } }).data
  t.ok(stats.wins >= auctions.size, `and its win counted: ${stats.wins} wins for ${auctions.size} acknowledged auctions`)
  t.ok(stats.wins <= stats.accepted, `no bid won twice: ${stats.wins} wins of ${stats.accepted} bids`)
  await stopsCleanly(t, second)
})
