import { dataIncarnation, type ClusterNode } from '../cluster/node.js'
import type { PartitionMachine } from '../cluster/partition-log.js'
import type { Logger } from '../log.js'
import type { Store } from '../store/store.js'
import { placeProof, type ProofEffects } from './chain.js'
import type { ProofCommand, ProofVerdict } from './records.js'

// A cluster's proofs of play, placed by one log (docs/architecture.md, "Proofs placed by one log"). Any node appends a
// signed play to it; every node applies it in the log's order with placeProof, the rule a node alone applies in the
// request's transaction, so each screen's chain is one line whichever nodes its plays were reported through, and an
// impression id proves once across all screens. The log is kept whole: it is the proofs' archive, which a node that
// joins late reads from its start before it serves, so no checkpoint has to hold every proof ever made.

/** The stream of the cluster's proof log. */
export const PROOFS_LOG = 'PROOFS'

/** How often a node proposes again the plays it has not seen placed, and how old a proposal must be for that. */
const RETRY_EVERY_MS = 5000

/**
 * The most plays one entry carries: a partner's batch of 1,000 is a few appends, not a thousand, and an entry stays
 * far under the engine's 1 MB a message (a play is under 1 KB).
 */
const PLAYS_AN_ENTRY = 250

/** An entry of the proof log: plays one node proposed together, placed in their order. */
interface PlaysEntry {
  op: 'plays'
  /**
   * The data directory of the node that proposed them (its incarnation in the engine): the node whose effects these
   * are (webhooks, analytics events), in any life of its process, and not a new disk under its name.
   */
  by: string | undefined
  plays: ProofCommand[]
}

/**
 * The proof log's apply, on every node that follows it. The node that proposed the plays (its data directory, in any
 * life of its process: an entry that landed before a crash is applied after the restart) writes their effects, and
 * stops proposing them.
 */
export function proofMachine (effects: ProofEffects): PartitionMachine {
  const { store } = effects
  return {
    owned: false,
    apply: (body, at) => {
      const entry = body as PlaysEntry
      const mine = entry.by !== undefined && entry.by === dataIncarnation(store)
      const verdicts = entry.plays.map((c) => {
        if (mine) store.pendingProofs.removeSync(c.proof_id)
        return placeProof(effects, c, { logTime: at.logTime, mine, log: true })
      })
      return { status: 'accepted', result: verdicts }
    }
  }
}

/**
 * Proposes plays to the proof log from this data directory, PLAYS_AN_ENTRY an entry, unfenced (the log's order places
 * them, whoever proposed) and fresh (their proof ids are new, so no key is kept for them): their verdicts, in order, or
 * undefined when the engine did not hold an entry, this node did not apply it in time, or it landed too late to count.
 */
export async function proposePlays (node: Pick<ClusterNode, 'propose'>, store: Store, plays: ProofCommand[]): Promise<ProofVerdict[] | undefined> {
  const by = dataIncarnation(store)
  const entries = Array.from({ length: Math.ceil(plays.length / PLAYS_AN_ENTRY) }, (_, i) => plays.slice(i * PLAYS_AN_ENTRY, (i + 1) * PLAYS_AN_ENTRY))
  const verdicts = await Promise.all(entries.map(async (chunk) => await node.propose(PROOFS_LOG, chunk[0]!.proof_id, { op: 'plays', by, plays: chunk } satisfies PlaysEntry, true)))
  return verdicts.every((v) => v?.status === 'accepted') ? verdicts.flatMap((v) => v!.result as ProofVerdict[]) : undefined
}

/**
 * Proposes again, every few seconds, the plays this node proposed and has not seen placed for longer than a proposal
 * may take: the request that billed a play may have been answered 503, or ended with its process, before its proof
 * landed. A play placed meanwhile comes back a duplicate, which ends it as well.
 */
export function startProofRetries (store: Store, node: Pick<ClusterNode, 'propose'>, ackTimeoutMs: number, log: Logger): { stop (): void } {
  let running = false
  const timer = setInterval(() => {
    if (running) return
    running = true
    store.refresh()
    const before = Date.now() - 2 * ackTimeoutMs
    const due = [...store.pendingProofs.getRange()].filter(({ value }) => value.at < before).map(({ value }) => value.command)
    if (due.length === 0) {
      running = false
      return
    }
    proposePlays(node, store, due).then((verdicts) => {
      if (verdicts === undefined) log.warn('proofs: plays not placed yet; proposed again shortly', { plays: due.length })
    }, () => {}).finally(() => { running = false })
  }, RETRY_EVERY_MS)
  timer.unref()
  return { stop: () => clearInterval(timer) }
}
