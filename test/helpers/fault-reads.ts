import type { DayRead, ListRead, ReserveArgs, ReservationRead } from '../../scripts/lib/faults/checker.js'
import type { History } from '../../scripts/lib/faults/history.js'
import type { TestCluster } from './cluster.js'

// The reads the booking invariants (scripts/lib/faults/checker.ts) are checked against, made through the public API
// on every node once the cluster has healed.

/** A screen-day and what each node shows booked on it. */
export async function dayReads (c: TestCluster, nodes: Array<{ id: string, url: string }>, key: string, screen: string, date: string): Promise<DayRead[]> {
  return await Promise.all(nodes.map(async (n) => {
    const r = await c.call(n.url, 'POST', '/openrtb/v2/screens/availability', { key, body: { screen_ids: [screen], start_date: date, end_date: date } })
    const period = r.body?.data?.screens?.[0]?.periods?.[0] as { capacity: number, booked: number } | undefined
    if (period === undefined) throw new Error(`${n.id} answered availability ${r.status} ${JSON.stringify(r.body).slice(0, 200)}`)
    return { node: n.id, screen, date, capacity: period.capacity, booked: period.booked }
  }))
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
