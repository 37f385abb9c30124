import { randomBytes } from 'node:crypto'
import type { Store } from '../store/store.js'
import { wholeTable } from './checkpoints.js'
import type { Logger } from '../log.js'
import { retryFor } from '../retry.js'
import type { UniqueNames } from './link.js'
import { FRESH_KEYS_KEEP_MS, type AppliedAt, type PartitionMachine } from './partition-log.js'
import type { NameClaim, Verdict } from './records.js'
import type { CommitCommand, CopiedCommand, FencedCommits } from './fenced-commits.js'

// Names unique across a cluster (a seat_id, a partner slug, an Idempotency-Key, a creative being moderated), claimed in
// a log of their own and decided at apply, in the log's order: the first claim wins (issue 47). They were numbered
// holds in a KV bucket, made by creates; nats-server 2.9.10 checks a create's expected sequence on the leader outside
// the Raft write (issue 4320), so two creates in flight at once could both win: a seat_id given twice, an
// Idempotency-Key run twice. The log's total order is what 2.9.10 does right.

/** The names' log: every node follows it (it is small), apart from the bookings' claims so that each elects alone. */
export const NAMES_LOG = 'NAMES'

/**
 * How long, in log time, a claim outlives its request: far longer than a row takes to reach every node, by when the
 * owner's own check (the seat that exists) refuses the name again. Every holder lapses claims at the same point of the
 * log, so they decide alike.
 */
export const CLAIM_TTL_MS = 600_000

/** Lapsed claims removed by one apply at most: the table's upkeep stays small beside the entry itself. */
const LAPSE_BATCH = 64

type NameCommand =
  | { op: 'claim', name: string, owner: string, take_over_after_ms?: number }
  | { op: 'release', name: string, owner: string }
  | CommitCommand
  | CopiedCommand

const ACCEPTED: Verdict = { status: 'accepted' }

/** Removes claims whose time has passed at log time now, oldest first. */
function lapse (store: Store, now: number): void {
  let n = 0
  for (const key of store.nameLapses.getKeys({ end: [now, '\uffff'] })) {
    if (n++ === LAPSE_BATCH) break
    const [, name] = key as [number, string]
    store.nameLapses.removeSync(key as [number, string])
    if ((store.nameClaims.get(name)?.lapses_at ?? Infinity) <= now) store.nameClaims.removeSync(name)
  }
}

/**
 * Whether owner's claim of a name, at log time now, wins over what holds it: nothing live, its own claim, or one held
 * longer than takeOverAfterMs. The names' log decides by it; a node waiting for a name looks by it when to ask again.
 */
export function claimable (held: NameClaim | undefined, owner: string, now: number, takeOverAfterMs?: number): boolean {
  if (held === undefined || held.lapses_at <= now || held.owner === owner) return true
  return takeOverAfterMs !== undefined && now - held.at > takeOverAfterMs
}

/**
 * The names' rules, applied in log order on every node: a claim is accepted when the name is free, already the
 * owner's (its first claim landed though its answer was lost), or held longer than the claimer's take_over_after_ms
 * (a request that ended without storing its outcome: its claim is over); a release only by the owner; a commit of rows
 * written under a record's lock only while its claim is still the writer's, and its writer's word that it has copied
 * the commit's other rows to the state bucket (fenced-commits.ts). changed hears, once
 * the apply has committed, of each name a claim or release was about (record-locks.ts wakes the requests waiting).
 */
export function nameMachine (store: Store, commits: FencedCommits, changed: (name: string) => void = () => {}): PartitionMachine {
  return {
    keepKeysMs: FRESH_KEYS_KEEP_MS,
    tables: [wholeTable('name_claims', store.nameClaims), wholeTable('name_lapses', store.nameLapses), ...commits.tables],
    restored: () => commits.restored(),
    apply (body: unknown, at: AppliedAt): Verdict {
      const now = at.logTime
      lapse(store, now)
      const c = body as NameCommand
      if (c.op === 'commit') return commits.apply(c, c.name === undefined ? undefined : liveClaim(store, c.name, now)?.owner, at.seq)
      if (c.op === 'copied') return commits.copied(c)
      store.afterCommit(() => changed(c.name))
      const held = store.nameClaims.get(c.name)
      const live = liveClaim(store, c.name, now)
      if (c.op === 'release') {
        if (live?.owner !== c.owner) return { status: 'refused', reason: 'not_held' }
        store.nameClaims.removeSync(c.name)
        store.nameLapses.removeSync([live.lapses_at, c.name])
        return ACCEPTED
      }
      if (live?.owner === c.owner) return ACCEPTED
      if (!claimable(held, c.owner, now, c.take_over_after_ms)) return { status: 'refused', reason: 'held' }
      if (held !== undefined) store.nameLapses.removeSync([held.lapses_at, c.name])
      const lapsesAt = now + CLAIM_TTL_MS
      store.nameClaims.putSync(c.name, { owner: c.owner, at: now, lapses_at: lapsesAt })
      store.nameLapses.putSync([lapsesAt, c.name], true)
      return ACCEPTED
    }
  }
}

/** A name's claim, unless it has lapsed at log time now. */
function liveClaim (store: Store, name: string, now: number): NameClaim | undefined {
  const held = store.nameClaims.get(name)
  return held !== undefined && held.lapses_at > now ? held : undefined
}

/** Appends a command to the names' log: its verdict once this node has applied it, undefined when unknown. */
export type ProposeName = (key: string, body: NameCommand) => Promise<Verdict | undefined>

/** UniqueNames decided in the names' log, run by the supervisor for its hot threads. */
export class NameClaims implements UniqueNames {
  readonly #propose: ProposeName
  readonly #log: Logger
  readonly #ackTimeoutMs: number

  constructor (propose: ProposeName, log: Logger, ackTimeoutMs: number) {
    this.#propose = propose
    this.#log = log
    this.#ackTimeoutMs = ackTimeoutMs
  }

  /**
   * A claim whose verdict is unknown (no acknowledgement: an election, no quorum) is sent again until the ack timeout
   * has passed twice; if the first landed, the second finds the name its owner's. Each command has a key of its own:
   * a claim refused while another held the name must not answer a later claim, made once it was given back.
   */
  async claim (name: string, owner: string, takeOverAfterMs?: number): Promise<boolean> {
    const body: NameCommand = { op: 'claim', name, owner, ...(takeOverAfterMs !== undefined ? { take_over_after_ms: takeOverAfterMs } : {}) }
    try {
      return await retryFor(async () => {
        const verdict = await this.#propose(`claim:${randomBytes(9).toString('base64url')}`, body)
        if (verdict === undefined) throw new Error('the names\' log did not decide the claim in time')
        return verdict.status === 'accepted'
      }, 2 * this.#ackTimeoutMs, 250)
    } catch (err) {
      this.#log.warn('cluster: a name could not be claimed', { error: err instanceof Error ? err.message : String(err) })
      throw err
    }
  }

  /**
   * Gives a name back. A release whose verdict is unknown is sent again for up to retryMs: only for a claim whose owner
   * is one request (a record's lock), which a late release can free nothing of but that request's own claim. A name a
   * caller's retries share (a seat_id) is released once: a second release landing late could free the claim of the
   * retry that holds it by then.
   */
  async release (name: string, owner: string, retryMs = 0): Promise<void> {
    const body: NameCommand = { op: 'release', name, owner }
    await retryFor(async () => {
      const verdict = await this.#propose(`release:${randomBytes(9).toString('base64url')}`, body)
      if (verdict === undefined) throw new Error('the names\' log did not decide the release in time')
    }, retryMs, 500).catch(() => this.#log.warn('cluster: a claimed name was not given back; it lapses by itself', { name }))
  }
}
