import { randomBytes } from 'node:crypto'
import type { Logger } from '../log.js'
import type { Store } from '../store/store.js'
import { wholeTable } from './checkpoints.js'
import { FRESH_KEYS_KEEP_MS, type AppliedAt, type PartitionMachine } from './partition-log.js'
import type { Verdict } from './records.js'

// Campaign budgets spent by many nodes (issue 28), granted in parts decided in a log of their own (issue 47). A node
// spends only the parts granted to it. The grants were numbered records made by KV creates, which nats-server 2.9.10
// lets race (two creates in flight can both succeed: a part granted twice, the budget overspent), and a create that
// timed out but landed was counted as another node's grant (that part of the budget lost). In the log, the first grant
// that fits wins, every node decides alike, and the node that asked is credited at apply, answered or not.

/** The grants' log: every node follows it. */
export const BUDGET_LOG = 'BUDGET'

/** What the campaigns give the grants: a running campaign's budget, and where a part granted to this node goes. */
export interface BudgetBook {
  /** The campaign's budget in micro-dollars, or undefined when it is not running. */
  limitOf (campaignId: string): number | undefined
  /** What every node was granted of the campaign's budget before its grants were in the log (a cluster upgraded). */
  grantedBefore (campaignId: string): number
  /**
   * Credits a part granted to this node, inside the transaction that applies the grant at seq of the log: once per
   * grant, however often the log is applied again from the start (src/campaigns/delivery.ts addLease).
   */
  granted (campaignId: string, micros: number, seq: number): void
  /** The campaigns of which this node holds part of the budget unspent (a read of every campaign's rows). */
  unspent (): string[]
  /** What this node has spent of the campaign's budget, and what it holds of it unspent. */
  leaseOf (campaignId: string): { spent: number, left: number }
  /** Gives up what this node holds unspent of the campaign (it spends none of it after), answering how much. */
  giveUp (campaignId: string): number
}

/**
 * How long a node holds part of a budget it does not spend from before it gives the part back, once the whole budget
 * is granted: the screens the campaign plays on may have moved to partitions other nodes decide (a node frozen, and
 * its partitions taken over), and the others, asking, would be granted nothing while the part waits here for good.
 */
const GIVE_BACK_AFTER_MS = 10_000

/** What a node gave back of a campaign's budget: it spends none of it (BudgetBook.giveUp), and the log may grant it again. */
interface ReturnCommand {
  op: 'return'
  campaign: string
  micros: number
}

interface GrantCommand {
  op: 'grant'
  campaign: string
  /** The part asked for. */
  want: number
  /** The campaign's budget as the asker read it. */
  limit: number
  /** The campaign's grants before the log, as the asker read them: counted when the log has none of the campaign yet. */
  before: number
}

/**
 * The grants' rule, applied in log order on every node: a part is granted up to what is left of the budget the asker
 * read, counted from every grant the log applied before it; the node that asked (by node id: its restarts included)
 * is credited in the same transaction. A node asks once at a time per campaign, so the last part granted to it is the
 * one it may not have applied when it stopped: a node that restores a checkpoint credits itself that part (once: a
 * grant is credited by its place in the log), else the budget would count a part no node spends.
 */
export function budgetMachine (store: Store, self: string, book: Pick<BudgetBook, 'granted'>): PartitionMachine {
  return {
    keepKeysMs: FRESH_KEYS_KEEP_MS,
    tables: [wholeTable('budget_grants', store.budgetGrants), wholeTable('budget_last_grants', store.budgetLastGrants)],
    apply (body: unknown, at: AppliedAt): Verdict {
      if ((body as ReturnCommand).op === 'return') {
        const r = body as ReturnCommand
        const total = Math.max(0, (store.budgetGrants.get(r.campaign) ?? 0) - r.micros)
        store.budgetGrants.putSync(r.campaign, total)
        return { status: 'accepted', result: { total } }
      }
      const c = body as GrantCommand
      const total = store.budgetGrants.get(c.campaign) ?? c.before
      const granted = Math.max(0, Math.min(c.want, c.limit - total))
      if (granted > 0) {
        store.budgetGrants.putSync(c.campaign, total + granted)
        store.budgetLastGrants.putSync([c.campaign, at.from.node], { seq: at.seq, micros: granted })
        if (at.from.node === self) book.granted(c.campaign, granted, at.seq)
      }
      return { status: 'accepted', result: { granted, total: total + granted } }
    },
    restored () {
      for (const { key: [campaign, node], value } of store.budgetLastGrants.getRange()) if (node === self) book.granted(campaign, value.micros, value.seq)
    }
  }
}

/**
 * A node's asks for the next part of a campaign's budget, once at a time per campaign, run by the supervisor. The
 * part lands in the node's delivery row when this node applies the grant, so an ask whose answer was lost loses
 * nothing.
 */
export class BudgetGrants {
  readonly #store: Store
  readonly #book: BudgetBook
  readonly #propose: (key: string, body: GrantCommand | ReturnCommand) => Promise<Verdict | undefined>
  readonly #log: Logger
  readonly #asking = new Set<string>()
  /**
   * The campaigns this node may hold part of unspent: those it held at start (read once), and those granted to it
   * since (credited); one is dropped once it holds none of it.
   */
  readonly #holding = new Set<string>()
  #seeded = false
  /** Per campaign this node holds part of unspent: its spend when last looked at, and since when it has not moved. */
  readonly #idle = new Map<string, { spent: number, since: number }>()

  constructor (deps: { store: Store, book: BudgetBook, propose: (key: string, body: GrantCommand | ReturnCommand) => Promise<Verdict | undefined>, log: Logger }) {
    this.#store = deps.store
    this.#book = deps.book
    this.#propose = deps.propose
    this.#log = deps.log
  }

  ask (campaignId: string, wantMicros: number): void {
    if (this.#asking.has(campaignId)) return
    const limit = this.#book.limitOf(campaignId)
    if (limit === undefined) return
    this.#asking.add(campaignId)
    const before = this.#store.budgetGrants.get(campaignId) === undefined ? this.#book.grantedBefore(campaignId) : 0
    this.#propose(`grant:${randomBytes(9).toString('base64url')}`, { op: 'grant', campaign: campaignId, want: wantMicros, limit, before }).catch(() => undefined).then((verdict) => {
      if (verdict === undefined) this.#log.warn('cluster: a budget part was not granted in time; the campaign spends what this node holds until the next ask', { campaign_id: campaignId })
    }).finally(() => this.#asking.delete(campaignId))
  }

  /** A part of the campaign's budget was credited to this node (budgetMachine's apply, or its restore). */
  credited (campaignId: string): void {
    this.#holding.add(campaignId)
  }

  /**
   * Gives back the parts this node has held unspent for GIVE_BACK_AFTER_MS (`now`, monotonic) of campaigns whose whole
   * budget is granted (or that no longer run). The part is taken out of this node's lease first and proposed once,
   * never again: a return that did not land leaves the budget short of that part (never past it), and one sent twice
   * would grant it twice.
   */
  giveBackIdle (now: number): void {
    if (!this.#seeded) {
      for (const campaignId of this.#book.unspent()) this.#holding.add(campaignId)
      this.#seeded = true
    }
    for (const campaignId of this.#holding) {
      const { spent, left } = this.#book.leaseOf(campaignId)
      if (left <= 0) {
        this.#holding.delete(campaignId)
        this.#idle.delete(campaignId)
        continue
      }
      const seen = this.#idle.get(campaignId)
      if (seen === undefined || seen.spent !== spent) {
        this.#idle.set(campaignId, { spent, since: now })
        continue
      }
      if (now - seen.since < GIVE_BACK_AFTER_MS) continue
      const limit = this.#book.limitOf(campaignId)
      if (limit !== undefined && (this.#store.budgetGrants.get(campaignId) ?? 0) < limit) continue
      const micros = this.#book.giveUp(campaignId)
      this.#idle.delete(campaignId)
      this.#holding.delete(campaignId)
      if (micros <= 0) continue
      this.#propose(`return:${randomBytes(9).toString('base64url')}`, { op: 'return', campaign: campaignId, micros }).catch(() => undefined).then((verdict) => {
        if (verdict === undefined) this.#log.warn('cluster: a budget part given back was not confirmed in time; if it did not land, the campaign is short of it', { campaign_id: campaignId, micros })
      })
    }
  }
}
