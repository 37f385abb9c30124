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
 * The proof log's apply, on every node that follows it. The node that proposed a play (its data directory, in any life
 * of its process: an entry that landed before a crash is applied after the restart) writes its effects, and stops
 * proposing it.
 */
export function proofMachine (effects: ProofEffects): PartitionMachine {
  const { store } = effects
  return {
    owned: false,
    apply: (body, at) => {
      const c = body as ProofCommand
      const mine = c.by !== undefined && c.by === dataIncarnation(store)
      if (mine) store.pendingProofs.removeSync(c.proof_id)
      return { status: 'accepted', result: placeProof(effects, c, { logTime: at.logTime, mine, log: true }) }
    }
  }
}

/**
 * Proposes a play to the proof log, from this data directory, unfenced (the log's order places it, whoever proposed)
 * and fresh (its proof id is new, so no key is kept for it): its verdict, or undefined when the engine did not hold it,
 * this node did not apply it in time, or it landed too late to count.
 */
export async function proposePlay (node: Pick<ClusterNode, 'propose'>, store: Store, command: ProofCommand): Promise<ProofVerdict | undefined> {
  const verdict = await node.propose(PROOFS_LOG, command.proof_id, { ...command, by: dataIncarnation(store) }, true)
  return verdict?.status === 'accepted' ? verdict.result as ProofVerdict : undefined
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
    Promise.all(due.map(async (c) => await proposePlay(node, store, c))).then((verdicts) => {
      const unplaced = verdicts.filter((v) => v === undefined).length
      if (unplaced > 0) log.warn('proofs: plays not placed yet; proposed again shortly', { plays: unplaced })
    }, () => {}).finally(() => { running = false })
  }, RETRY_EVERY_MS)
  timer.unref()
  return { stop: () => clearInterval(timer) }
}
