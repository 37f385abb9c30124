import type { KV } from 'nats'
import type { Logger } from '../log.js'
import { takeGrant, type GrantRun } from './numbered-keys.js'

/** What the campaigns give the leases: a running campaign's budget, and where a grant goes. */
export interface BudgetBook {
  /** The campaign's budget in micro-dollars, or undefined when it is not running. */
  limitOf (campaignId: string): number | undefined
  /** Records a part granted to this node (src/campaigns/delivery.ts addLease). */
  granted (campaignId: string, micros: number): void
}

/**
 * Campaign budgets spent by many nodes (issue 28). A node spends only what the engine granted it: a campaign's grants
 * are numbered records in the budgets bucket, each holding the budget granted through itself, taken with a KV create
 * that one node wins (src/cluster/numbered-keys.ts), so the nodes together are never granted more than the budget.
 * A grant is a part of the budget (5%, src/campaigns/budget.ts leasePart), asked for by a hot thread when its node's
 * part runs under half, and written into the node's delivery row of the campaign, where every thread reads it. Run
 * by the supervisor, which holds the node's connection to the engine.
 */
export class BudgetLeases {
  readonly #budgets: KV
  readonly #book: BudgetBook
  readonly #log: Logger
  /** Per campaign, what this node has learned of its grants (after a restart it learns them again, a read each). */
  readonly #known = new Map<string, GrantRun>()
  readonly #asking = new Set<string>()

  constructor (deps: { budgets: KV, book: BudgetBook, log: Logger }) {
    this.#budgets = deps.budgets
    this.#book = deps.book
    this.#log = deps.log
  }

  /** Asks the engine for the next part of a campaign's budget, once at a time per campaign. */
  ask (campaignId: string, wantMicros: number): void {
    if (this.#asking.has(campaignId)) return
    this.#asking.add(campaignId)
    this.#grant(campaignId, wantMicros).catch((err: unknown) => {
      this.#log.warn('cluster: a budget part was not granted; the campaign spends what this node holds until the next ask', { campaign_id: campaignId, error: err instanceof Error ? err.message : String(err) })
    }).finally(() => this.#asking.delete(campaignId))
  }

  async #grant (campaignId: string, wantMicros: number): Promise<void> {
    const limit = this.#book.limitOf(campaignId)
    if (limit === undefined) return
    let known = this.#known.get(campaignId)
    if (known === undefined) this.#known.set(campaignId, known = { next: 0, total: 0 })
    const { granted } = await takeGrant(this.#budgets, `b.${campaignId}`, known, wantMicros, limit)
    if (granted > 0) this.#book.granted(campaignId, granted)
  }
}
