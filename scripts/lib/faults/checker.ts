import type { History, Op } from './history.js'

// Invariants checked over a history (history.ts) and the reads made once the cluster has healed, Jepsen-style: each
// says how many cases it checked and lists every violation, so that a run that checked nothing cannot pass unseen.
// Written against the public API only (issue 47): what clients were told and what every node answers afterwards.

export interface Check {
  name: string
  /** The cases it looked at (a screen-day, a reservation on a node). */
  checked: number
  violations: string[]
}

/**
 * A POST /openrtb/v2/reservations as a client invoked it: its screens, one day, and the Idempotency-Key it sent (a
 * client retries an unknown outcome with the same key: every attempt is one operation of the history).
 */
export interface ReserveArgs { seat: string, screens: string[], date: string, spots: number, key: string }

/** What one node answered for a screen's day (POST /openrtb/v2/screens/availability) once the cluster healed. */
export interface DayRead { node: string, screen: string, date: string, capacity: number, booked: number }

/** What one node answered for an acknowledged reservation (GET /openrtb/v2/reservations/:id) once healed. */
export interface ReservationRead { node: string, reservationId: string, status: number, body: unknown }

/** The reservations a seat lists through one node (GET /openrtb/v2/reservations, every page), once healed. */
export interface ListRead { node: string, seat: string, reservations: Array<{ reservation_id: string, screen_ids: string[], start_date: string, spots_per_day: number, status: string }> }

/** Statuses of a reservation that still take its spots. */
const LIVE = new Set(['held', 'confirmed'])

const day = (screen: string, date: string) => `${screen} ${date}`
const idOf = (o: Op) => (o.body as { data?: { reservation_id?: string } } | undefined)?.data?.reservation_id

/**
 * The booking invariants of issue 47 over the history's `reserve` operations (args ReserveArgs) and the final reads:
 *  - capacity: on each screen-day, the spots of acknowledged reservations come to no more than its capacity (a hold of
 *    several screens counts on each of them; the holds
 *    live for the whole run: the cluster is started with holds longer than it);
 *  - acknowledged readable: every acknowledged reservation is read back, live and with its spots, on every node;
 *  - nodes agree: every node shows the same spots booked on each screen-day;
 *  - booked accounts for acknowledged: what a node shows booked is at least the acknowledged spots and at most those
 *    plus the spots of unknown outcomes (availability shows booked capped at capacity, so both ends are capped too);
 *  - each Idempotency-Key made one reservation: every acknowledgement of a key (a retry's too) names the same one;
 *  - no phantom reservations: a seat lists no more reservations nobody was told about than there were unknown outcomes.
 */
export function checkBookings (history: History, reads: { days: DayRead[], reservations: ReservationRead[], lists?: ListRead[] }): Check[] {
  const reserves = history.select<ReserveArgs>('reserve')
  // A key acknowledged twice (a retry of an unknown outcome) is one hold.
  const acked = [...new Map(reserves.filter((o) => o.outcome === 'ok').map((o) => [o.args.key, o])).values()]
  // A key whose retry was answered is not unknown any more.
  const answered = new Set(reserves.filter((o) => o.outcome !== 'unknown').map((o) => o.args.key))
  const unknown = [...new Map(reserves.filter((o) => o.outcome === 'unknown' && !answered.has(o.args.key)).map((o) => [o.args.key, o])).values()]
  const capacityOf = new Map(reads.days.map((r) => [day(r.screen, r.date), r.capacity]))
  const takes = (o: Op<ReserveArgs>, key: string) => o.args.screens.some((s) => day(s, o.args.date) === key)
  const sum = (ops: Array<Op<ReserveArgs>>, key: string) => ops.filter((o) => takes(o, key)).reduce((n, o) => n + o.args.spots, 0)

  const capacity: Check = { name: 'acknowledged spots within capacity', checked: 0, violations: [] }
  for (const [key, cap] of capacityOf) {
    capacity.checked++
    const spots = sum(acked, key)
    if (spots > cap) capacity.violations.push(`${key}: ${spots} spots acknowledged over a capacity of ${cap} (oversold by ${spots - cap}, ${acked.filter((o) => takes(o, key)).length} holds acknowledged)`)
  }

  const readable: Check = { name: 'acknowledged reservations readable on every node', checked: 0, violations: [] }
  const nodes = [...new Set(reads.days.map((r) => r.node))]
  for (const o of acked) {
    const id = idOf(o)
    for (const node of nodes) {
      readable.checked++
      const read = reads.reservations.find((r) => r.node === node && r.reservationId === id)
      const data = (read?.body as { data?: { status?: string, spots_per_day?: number } } | undefined)?.data
      if (id === undefined) readable.violations.push(`op ${o.index} (${o.client} via ${o.node}) was acknowledged without a reservation_id`)
      else if (read === undefined) readable.violations.push(`${id} (acknowledged by ${o.node}) was not read on ${node}`)
      else if (read.status !== 200 || data?.status === undefined || !LIVE.has(data.status) || data.spots_per_day !== o.args.spots) readable.violations.push(`${id} (acknowledged by ${o.node}) on ${node}: ${read.status} ${JSON.stringify(read.body).slice(0, 200)}`)
    }
  }

  const agree: Check = { name: 'nodes agree on spots booked', checked: 0, violations: [] }
  const accounts: Check = { name: 'spots booked account for acknowledged holds', checked: 0, violations: [] }
  for (const [key, cap] of capacityOf) {
    const shown = reads.days.filter((r) => day(r.screen, r.date) === key)
    agree.checked++
    if (new Set(shown.map((r) => r.booked)).size > 1) agree.violations.push(`${key}: ${shown.map((r) => `${r.node} ${r.booked}`).join(', ')}`)
    const low = Math.min(cap, sum(acked, key))
    const high = Math.min(cap, sum(acked, key) + sum(unknown, key))
    for (const r of shown) {
      accounts.checked++
      if (r.booked < low || r.booked > high) accounts.violations.push(`${key} on ${r.node}: ${r.booked} booked, expected ${low === high ? low : `${low} to ${high}`} (${sum(acked, key)} acknowledged, ${sum(unknown, key)} unknown)`)
    }
  }

  const once: Check = { name: 'each Idempotency-Key made one reservation', checked: 0, violations: [] }
  const byKey = new Map<string, Set<string | undefined>>()
  for (const o of reserves.filter((o) => o.outcome === 'ok')) byKey.set(o.args.key, (byKey.get(o.args.key) ?? new Set()).add(idOf(o)))
  for (const [key, ids] of byKey) {
    once.checked++
    if (ids.size > 1) once.violations.push(`${key}: acknowledged as ${[...ids].join(', ')}`)
  }

  const checks = [capacity, readable, agree, accounts, once]
  if (reads.lists !== undefined) {
    const phantoms: Check = { name: 'no phantom reservations', checked: 0, violations: [] }
    const known = new Set(acked.map(idOf))
    for (const list of reads.lists) {
      for (const key of capacityOf.keys()) {
        phantoms.checked++
        const live = list.reservations.filter((r) => LIVE.has(r.status) && r.screen_ids.some((s) => day(s, r.start_date) === key))
        const strangers = live.filter((r) => !known.has(r.reservation_id))
        const couldBe = unknown.filter((o) => o.args.seat === list.seat && takes(o, key)).length
        if (strangers.length > couldBe) phantoms.violations.push(`${list.seat} on ${list.node}, ${key}: ${strangers.length} live reservations no client was told about, ${couldBe} unknown outcomes to explain them (${strangers.map((r) => r.reservation_id).join(', ')})`)
      }
    }
    checks.push(phantoms)
  }
  return checks
}

/** A POST /openrtb/v2/onboard as a client invoked it: the seat_id it asked for and its Idempotency-Key. */
export interface OnboardArgs { seatId: string, key: string }

/** What one node answered for an acknowledged seat's key (GET /openrtb/v2/seat), once healed. */
export interface SeatRead { node: string, seatId: string, status: number, seatIdRead?: string }

const registrationOf = (o: Op) => (o.body as { data?: { registration?: { id?: string } } } | undefined)?.data?.registration?.id

/**
 * The invariants of names unique across the cluster (issue 47: seat_ids and Idempotency-Keys, claimed in the names'
 * log) over the history's `onboard` operations (args OnboardArgs) and the final reads:
 *  - one seat a seat_id: every acknowledged onboarding of a seat_id, whatever its Idempotency-Key, names one
 *    registration, and only one of the keys that asked for it was acknowledged;
 *  - each Idempotency-Key ran once: every acknowledgement of a key (a retry's too) names the same registration;
 *  - acknowledged readable: every acknowledged seat's key is accepted, naming its seat, on every node.
 */
export function checkNames (history: History, reads: SeatRead[]): Check[] {
  const onboards = history.select<OnboardArgs>('onboard', 'ok')
  const bySeat = new Map<string, Array<Op<OnboardArgs>>>()
  for (const o of onboards) bySeat.set(o.args.seatId, [...(bySeat.get(o.args.seatId) ?? []), o])
  const seats: Check = { name: 'one seat a seat_id', checked: 0, violations: [] }
  for (const [seatId, ops] of bySeat) {
    seats.checked++
    const registrations = new Set(ops.map(registrationOf))
    const keys = new Set(ops.map((o) => o.args.key))
    if (registrations.size > 1 || keys.size > 1) seats.violations.push(`${seatId}: acknowledged to ${keys.size} Idempotency-Keys as ${registrations.size} registrations (${[...registrations].join(', ')})`)
  }
  const once: Check = { name: 'each Idempotency-Key ran once', checked: 0, violations: [] }
  const byKey = new Map<string, Set<string | undefined>>()
  for (const o of onboards) byKey.set(o.args.key, (byKey.get(o.args.key) ?? new Set()).add(registrationOf(o)))
  for (const [key, registrations] of byKey) {
    once.checked++
    if (registrations.size > 1) once.violations.push(`${key}: acknowledged as ${registrations.size} registrations (${[...registrations].join(', ')})`)
  }
  const readable: Check = { name: 'acknowledged seats readable on every node', checked: 0, violations: [] }
  for (const r of reads) {
    readable.checked++
    if (r.status !== 200 || r.seatIdRead !== r.seatId) readable.violations.push(`${r.seatId} on ${r.node}: ${r.status}, seat ${r.seatIdRead ?? '-'}`)
  }
  return [seats, once, readable]
}

/** A partner's play (POST /v1/partner/impressions, one impression) as a client invoked it: its impression id and screen. */
export interface ProveArgs { impressionId: string, screen: string }

/** A screen's proofs as one node lists them once healed (GET /v1/advertiser/proof/proofs, every page). */
export interface ChainRead { node: string, screen: string, proofs: Array<{ proof_id: string, impressionId: string, chain: { seq: number, prev_digest: string } & { digest: string } }> }

/** The proof an acknowledged play was told: accepted, or a duplicate naming the first. */
const toldProof = (o: Op) => (o.body as { data?: { results?: Array<{ status?: string, proof_id?: string }> } } | undefined)?.data?.results?.[0]?.proof_id

/**
 * The proof invariants of issue 47 over the history's `prove` operations (args ProveArgs) and the chains every node
 * lists once healed:
 *  - acknowledged readable: every play acknowledged (accepted, or a duplicate naming the first proof) is listed on
 *    every node under the proof it was told, and a play answered rejected (and never acknowledged) on none;
 *  - one proof an impression: on each node an impression id has one proof at most, and every acknowledgement of it
 *    (a retry's, another node's) names that one;
 *  - chains one line: on each node each screen's places run from 1 with none missing or held twice, each proof chained
 *    to the digest of the one before;
 *  - nodes agree: every node lists each screen's chain alike.
 */
export function checkProofs (history: History, reads: ChainRead[]): Check[] {
  const told = new Map<string, Set<string>>()
  // Answered, its play rejected (a creative this node had not heard of yet): not proven, and proven nowhere.
  const rejected = new Set<string>()
  for (const o of history.select<ProveArgs>('prove', 'ok')) {
    const proof = toldProof(o)
    if (proof === undefined) rejected.add(o.args.impressionId)
    else told.set(o.args.impressionId, (told.get(o.args.impressionId) ?? new Set()).add(proof))
  }
  const nodes = [...new Set(reads.map((r) => r.node))]
  const listed = new Map(nodes.map((node) => [node, new Map<string, string[]>()]))
  for (const r of reads) for (const p of r.proofs) listed.get(r.node)!.set(p.impressionId, [...(listed.get(r.node)!.get(p.impressionId) ?? []), p.proof_id])

  const readable: Check = { name: 'acknowledged plays proven on every node', checked: 0, violations: [] }
  const once: Check = { name: 'one proof an impression id', checked: 0, violations: [] }
  for (const [impression, proofs] of told) {
    once.checked++
    if (proofs.size > 1) once.violations.push(`${impression}: acknowledged as ${proofs.size} proofs (${[...proofs].join(', ')})`)
    for (const node of nodes) {
      readable.checked++
      const there = listed.get(node)!.get(impression) ?? []
      if (!there.some((id) => proofs.has(id))) readable.violations.push(`${impression} on ${node}: told ${[...proofs].join(', ')}, listed ${there.join(', ') || 'none'}`)
    }
  }
  for (const impression of rejected) {
    if (told.has(impression)) continue
    for (const node of nodes) {
      readable.checked++
      const there = listed.get(node)!.get(impression) ?? []
      if (there.length > 0) readable.violations.push(`${impression} on ${node}: rejected, yet listed ${there.join(', ')}`)
    }
  }
  for (const [node, byImpression] of listed) {
    for (const [impression, ids] of byImpression) {
      once.checked++
      if (ids.length > 1) once.violations.push(`${impression} on ${node}: ${ids.length} proofs (${ids.join(', ')})`)
    }
  }
  const line: Check = { name: 'each screen\'s proof chain one line', checked: 0, violations: [] }
  const agree: Check = { name: 'nodes list each chain alike', checked: 0, violations: [] }
  const chainOf = new Map<string, string>()
  for (const r of reads) {
    const chain = [...r.proofs].sort((a, b) => a.chain.seq - b.chain.seq)
    chain.forEach((p, i) => {
      line.checked++
      if (p.chain.seq !== i + 1) line.violations.push(`${r.screen} on ${r.node}: place ${i + 1} is ${p.proof_id}'s ${p.chain.seq}`)
      else if (i > 0 && p.chain.prev_digest !== chain[i - 1]!.chain.digest) line.violations.push(`${r.screen} on ${r.node}: ${p.proof_id} at ${p.chain.seq} not chained to ${chain[i - 1]!.proof_id}`)
    })
    const seen = JSON.stringify(chain.map((p) => [p.chain.seq, p.proof_id, p.chain.digest]))
    const first = chainOf.get(r.screen)
    agree.checked++
    if (first === undefined) chainOf.set(r.screen, seen)
    else if (first !== seen) agree.violations.push(`${r.screen}: ${r.node} lists another chain (${chain.length} places)`)
  }
  return [readable, once, line, agree]
}

/**
 * A rewrite of one field of a shared record under the record's lock (PUT /admin/v1/seats/:id/rate-limits merges one
 * group's limit into the seat's): each client owns one field (register) and writes it rising values, one at a time, so
 * that any read of the record after an acknowledgement of value v must show that field at v or later.
 */
export interface RegisterArgs { record: string, register: string, value: number, key: string }

/** What one node shows of a register once healed: its value, or undefined when absent. */
export interface RegisterRead { node: string, record: string, register: string, value: number | undefined }

/**
 * The invariants of records rewritten under their lock (issue 47: a holder paused or cut off past the lock's 30 s
 * wakes with what it read before; its write must not land over the next holder's) over the history's `rewrite`
 * operations (args RegisterArgs) and the final reads:
 *  - no lost update: every register shows at least the last value acknowledged for it, on every node (a stale
 *    read-modify-write of another field brings an older value of this one back);
 *  - no phantom value: no register shows a value no client asked for;
 *  - nodes agree: every node shows the same value of each register.
 */
export function checkRegisters (history: History, reads: RegisterRead[]): Check[] {
  const ops = history.select<RegisterArgs>('rewrite')
  const at = (record: string, register: string) => `${record} ${register}`
  const acked = new Map<string, number>()
  const asked = new Map<string, Set<number>>()
  for (const o of ops) {
    const r = at(o.args.record, o.args.register)
    asked.set(r, (asked.get(r) ?? new Set()).add(o.args.value))
    if (o.outcome === 'ok') acked.set(r, Math.max(acked.get(r) ?? -Infinity, o.args.value))
  }
  const lost: Check = { name: 'no acknowledged rewrite overwritten by an older one', checked: 0, violations: [] }
  const phantom: Check = { name: 'no register shows a value nobody wrote', checked: 0, violations: [] }
  const agree: Check = { name: 'nodes agree on each register', checked: 0, violations: [] }
  const seen = new Map<string, number | undefined>()
  for (const read of reads) {
    const r = at(read.record, read.register)
    const last = acked.get(r)
    lost.checked++
    if (last !== undefined && (read.value === undefined || read.value < last)) lost.violations.push(`${r} on ${read.node}: shows ${read.value ?? 'nothing'}, ${last} was acknowledged`)
    phantom.checked++
    if (read.value !== undefined && asked.has(r) && !asked.get(r)!.has(read.value)) phantom.violations.push(`${r} on ${read.node}: shows ${read.value}, never written`)
    agree.checked++
    if (!seen.has(r)) seen.set(r, read.value)
    else if (seen.get(r) !== read.value) agree.violations.push(`${r}: ${read.node} shows ${read.value ?? 'nothing'}, another node ${seen.get(r) ?? 'nothing'}`)
  }
  return [lost, phantom, agree]
}

/** One line a check, `checked N, violations M`, and each violation under it: what a test prints. */
export function summary (checks: Check[]): string[] {
  return checks.flatMap((c) => [`${c.name}: checked ${c.checked}, violations ${c.violations.length}`, ...c.violations.slice(0, 20).map((v) => `  ${v}`), ...(c.violations.length > 20 ? [`  ... and ${c.violations.length - 20} more`] : [])])
}
