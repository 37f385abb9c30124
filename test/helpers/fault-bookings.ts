import type { Test } from 'tap'
import { checkBookings, type DayRead, type ListRead, type ReserveArgs, type ReservationRead } from '../../scripts/lib/faults/checker.js'
import type { History } from '../../scripts/lib/faults/history.js'
import { partitionOf } from '../../src/cluster/screen-partitions.js'
import { gymDevice, PARTITIONS, type TestCluster } from './cluster.js'
import { eventually, pause } from './eventually.js'
import { holdChecks } from './fault-checks.js'
import { untilKnown } from './fault-retries.js'
import { freshIp } from './service.js'

// The fault suite's bookings (issue 47): clients holding screen time through chosen nodes while a fault is injected,
// recorded in a history, and the reads through the public API on every node, once the cluster has healed, that the
// booking invariants (scripts/lib/faults/checker.ts) are checked against.

/** What a scenario books: the screens each hold takes (all of them), on one day, so many spots a hold. */
export interface Booking {
  screens: string[]
  date: string
  spots: number
  seats: Array<{ seat: string, key: string }>
}


/** Until an answer is not a 503; the first 503's reason goes in the test's output, so a slow run says what was slow. */
function unlessBusy (t: Test): (r: { status: number, body: unknown }) => boolean {
  let told = false
  return (r) => {
    if (r.status !== 503) return true
    if (!told) t.comment(`answered 503 first, sent again: ${JSON.stringify(r.body).slice(0, 300)}`)
    told = true
    return false
  }
}

/**
 * A scenario's setting, named by prefix: an operator's screens registered through node-1, two of them in different
 * partitions (chosen by the partitions' hash, src/campaigns/capacity.ts, the one thing not read through the API, so
 * that each hold is all or nothing through the claims log), and two buyer seats whose limits the load cannot reach,
 * once every node knows them. Answers the screens, the seats, and the capacity of their day `daysAhead` from now, and
 * the operator's key and the screens' devices, for plays reported on them.
 */
export async function bookingSetting (t: Test, c: TestCluster, prefix: string, daysAhead: number): Promise<Omit<Booking, 'spots'> & { capacity: number, partner: { key: string, devices: string[] } }> {
  const partner = await c.call(c.cluster.frontUrl, 'POST', '/v1/partner/register', { body: { name: `${prefix} Screens`, slug: `${prefix}-screens`, contact_email: `ops@${prefix}.example`, partner_type: 'screen_operator', domain: `${prefix}.example` }, headers: { 'x-forwarded-for': freshIp() } })
  t.equal(partner.status, 201, 'a screen operator registered')
  // device_id is the upsert key: sent again while the answer is a 503 (the partner's lock, or its write's verdict,
  // slow on a loaded run just after a node was healed), as the API asks.
  const batch = await eventually(t, 'its screens registered through node-1', () => c.call(c.nodes[0].url, 'POST', '/v1/partner/devices/batch', { key: partner.body.data.api_key.key, body: { devices: [0, 1, 2, 3].map((i) => gymDevice(`${prefix}-${i}`)) } }), { within: 20_000, every: 500, until: unlessBusy(t) })
  t.equal(batch.status, 200, `its screens registered through node-1 (${JSON.stringify(batch.body).slice(0, 300)})`)
  const ids = (batch.body.data.results as Array<{ screen_id: string }>).map((r) => r.screen_id)
  const screens = [ids[0]!, ids.find((id) => partitionOf(id, PARTITIONS) !== partitionOf(ids[0]!, PARTITIONS))!]
  const devices = screens.map((id) => (batch.body.data.results as Array<{ screen_id: string, device_id: string }>).find((r) => r.screen_id === id)!.device_id)
  t.ok(screens[1] !== undefined, 'two of them in different partitions')
  const seats: Array<{ seat: string, key: string }> = []
  for (const seat of [`${prefix}-buyer-1`, `${prefix}-buyer-2`]) {
    // Sent again with its Idempotency-Key while the answer is a 503 or none (a loaded run's front, a first write
    // through the names' log past the 2 s ack timeout): a client that follows the API gets its seat once.
    const retried = { 'idempotency-key': `${seat}-onboarding`, 'x-forwarded-for': freshIp() }
    const onboarded = await eventually(t, `${seat} onboarded through the front`, () => c.onboard(c.cluster.frontUrl, seat, retried), { within: 20_000, every: 500, until: (r) => r.status !== 503 })
    t.equal(onboarded.status, 201, `${seat} onboarded`)
    const key = onboarded.body.data.api_key.key as string
    // Setting limits is idempotent: sent again while the answer is a 503 (the seat's lock, or catching up, slow on a
    // loaded run's node just healed), as the API asks.
    const limited = await eventually(t, `${seat}'s limits raised`, () => c.admin(c.nodes[0].url, 'PUT', `/admin/v1/seats/${seat}/rate-limits`, { limits: { campaigns: 1_000_000, inventory: 1_000_000, account: 1_000_000, creatives: 1_000_000, reporting: 1_000_000 }, reason: 'fault test' }), { within: 20_000, every: 500, until: unlessBusy(t) })
    t.equal(limited.status, 200, `${seat}'s limits raised (${JSON.stringify(limited.body).slice(0, 200)})`)
    seats.push({ seat, key })
  }
  const date = new Date(Date.now() + daysAhead * 86_400_000).toISOString().slice(0, 10)
  for (const node of c.nodes) await eventually(t, `${node.id} knows the screens and the seats`, async () => (await c.call(node.url, 'POST', '/openrtb/v2/screens/availability', { key: seats[1]!.key, body: { screen_ids: screens, start_date: date, end_date: date } })).body.data?.screens?.length as number | undefined, { within: 20_000, every: 100, until: (n) => n === 2 })
  const capacity = Math.min(...(await dayReads(c, [c.nodes[0]], seats[0]!.key, screens, date)).map((r) => r.capacity))
  return { screens, seats, date, capacity, partner: { key: partner.body.data.api_key.key as string, devices } }
}

/**
 * Starts `perNode` clients on each node, each holding the booking's screens again and again, paced (so that the day
 * fills over seconds), every answer recorded in the history; until stop(), which resolves once every client has had
 * its last answer. Each hold has an Idempotency-Key of its own; a hold whose outcome is unknown (no answer, a 5xx) is
 * sent again with it, through the same node, up to three times a second apart, as a careful client does. booked():
 * the spots acknowledged so far.
 */
export function bookingClients (c: TestCluster, history: History, nodes: Array<{ id: string, url: string }>, b: Booking, perNode = 3): { stop: () => Promise<void>, booked: () => number } {
  let stopped = false
  let booked = 0
  let holds = 0
  const reserve = (node: { id: string, url: string }, seat: { seat: string, key: string }, args: ReserveArgs) => () => c.call(node.url, 'POST', '/openrtb/v2/reservations', { key: seat.key, headers: { 'idempotency-key': args.key }, body: { screen_ids: b.screens, start_date: b.date, end_date: b.date, spots_per_day: b.spots } })
  const hold = async (name: string, node: { id: string, url: string }, seat: { seat: string, key: string }) => {
    const args: ReserveArgs = { seat: seat.seat, screens: b.screens, date: b.date, spots: b.spots, key: `${name}-${++holds}` }
    if ((await untilKnown(history, name, node.id, 'reserve', args, reserve(node, seat, args), 3))?.status === 201) booked += b.spots
    await pause(20 + Math.random() * 60)
  }
  const client = async (name: string, node: { id: string, url: string }, seat: { seat: string, key: string }) => {
    while (!stopped) await hold(name, node, seat)
  }
  const clients = nodes.flatMap((node, n) => Array.from({ length: perNode }, (_, i) => client(`${node.id}/c${i}`, node, b.seats[(n + i) % b.seats.length]!)))
  return {
    stop: async () => {
      stopped = true
      await Promise.all(clients)
      history.note('clients stopped')
    },
    booked: () => booked
  }
}

/**
 * Waits until every node shows the same spots booked on each screen, twice in a row a second apart, then checks the
 * booking invariants over the history and every node's reads, printing the counts checked and each violation.
 */
export async function checkConverged (t: Test, c: TestCluster, history: History, b: Booking): Promise<void> {
  let last = ''
  await eventually(t, 'every node shows the same spots booked, steadily', async () => {
    const reads = await dayReads(c, c.nodes, b.seats[0]!.key, b.screens, b.date)
    const byScreen = b.screens.map((s) => reads.filter((r) => r.screen === s).map((r) => r.booked))
    const shown = JSON.stringify(byScreen)
    const steady = shown === last && byScreen.every((booked) => new Set(booked).size === 1)
    last = shown
    return steady
  }, { within: 30_000, every: 1000 })
  const checks = checkBookings(history, {
    days: await dayReads(c, c.nodes, b.seats[0]!.key, b.screens, b.date),
    reservations: await reservationReads(c, c.nodes, history, (seat) => b.seats.find((s) => s.seat === seat)!.key),
    lists: await listReads(c, c.nodes, b.seats)
  })
  for (const line of history.tally()) t.comment(line)
  holdChecks(t, checks)
  const unanswered = history.ops.filter((o) => o.outcome === 'unknown')
  const described = unanswered.slice(0, 10).map((o) => {
    const code = (o.body as { error_code?: string } | undefined)?.error_code
    return `${o.client} ${o.status ?? o.error}${code !== undefined ? ` ${code}` : ''}`
  })
  if (unanswered.length > 0) t.comment(`unknown outcomes: ${described.join('; ')}`)
}

/** Screens' day and what each node shows booked on each. */
export async function dayReads (c: TestCluster, nodes: Array<{ id: string, url: string }>, key: string, screens: string[], date: string): Promise<DayRead[]> {
  return (await Promise.all(nodes.map(async (n) => {
    const r = await c.call(n.url, 'POST', '/openrtb/v2/screens/availability', { key, body: { screen_ids: screens, start_date: date, end_date: date } })
    const shown = r.body?.data?.screens as Array<{ periods: Array<{ capacity: number, booked: number }> }> | undefined
    if (shown?.length !== screens.length) throw new Error(`${n.id} answered availability ${r.status} ${JSON.stringify(r.body).slice(0, 200)}`)
    return screens.map((screen, i) => ({ node: n.id, screen, date, capacity: shown[i]!.periods[0]!.capacity, booked: shown[i]!.periods[0]!.booked }))
  }))).flat()
}

/** Every acknowledged reservation of the history read through every node, with its seat's key, a few at a time. */
export async function reservationReads (c: TestCluster, nodes: Array<{ id: string, url: string }>, history: History, keyOf: (seat: string) => string): Promise<ReservationRead[]> {
  const jobs = history.select<ReserveArgs>('reserve', 'ok').flatMap((o) => nodes.map((n) => ({ n, o, id: (o.body as { data: { reservation_id: string } }).data.reservation_id })))
  const reads: ReservationRead[] = []
  const worker = async () => {
    for (let job = jobs.shift(); job !== undefined; job = jobs.shift()) {
      const r = await c.call(job.n.url, 'GET', `/openrtb/v2/reservations/${job.id}`, { key: keyOf(job.o.args.seat) })
      reads.push({ node: job.n.id, reservationId: job.id, status: r.status, body: r.body })
    }
  }
  await Promise.all(Array.from({ length: 8 }, worker))
  return reads
}

/** Every reservation each seat lists through each node, page by page. */
export async function listReads (c: TestCluster, nodes: Array<{ id: string, url: string }>, seats: Array<{ seat: string, key: string }>): Promise<ListRead[]> {
  const reads: ListRead[] = []
  for (const n of nodes) {
    for (const s of seats) {
      const all: ListRead['reservations'] = []
      let cursor: string | null = null
      do {
        const page: { status: number, body: any } = await c.call(n.url, 'GET', `/openrtb/v2/reservations?limit=200${cursor !== null ? `&cursor=${encodeURIComponent(cursor)}` : ''}`, { key: s.key })
        if (page.status !== 200) throw new Error(`${n.id} listed ${s.seat}'s reservations with ${page.status} ${JSON.stringify(page.body).slice(0, 200)}`)
        all.push(...page.body.data.reservations)
        cursor = page.body.data.cursor?.has_more === true ? page.body.data.cursor.next : null
      } while (cursor !== null)
      reads.push({ node: n.id, seat: s.seat, reservations: all })
    }
  }
  return reads
}
